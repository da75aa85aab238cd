"""Checksums registered for a version against those seen after a restore, per node.

A node is *matched* when both sides hold the same checksum, *mismatched* when both sides
hold a checksum and they differ, and *not verified* when either side is blank: a checksum
nobody recorded proves nothing either way, so it is neither a match nor a mismatch. The
drill model, the services and the data migration share it; its only Django import is the
translation of the sentence, worded in the reader's language when it is shown.
"""

from dataclasses import dataclass, field

from django.utils.translation import gettext

NAMED_NODES_MAX = 5


@dataclass(frozen=True)
class ChecksumComparison:
    matched: list[str] = field(default_factory=list)
    mismatches: list[dict] = field(default_factory=list)
    unverified: list[dict] = field(default_factory=list)

    @property
    def compared(self) -> int:
        """Nodes with a checksum on both sides."""
        return len(self.matched) + len(self.mismatches)

    @property
    def nodes(self) -> int:
        return self.compared + len(self.unverified)

    @property
    def verified(self) -> bool:
        """Every node known on either side was compared (and there was at least one)."""
        return self.nodes > 0 and not self.unverified


def compare_checksums(expected: dict[str, str], observed: dict[str, str]) -> ChecksumComparison:
    """``expected`` (registered) and ``observed`` (after the restore) map node → checksum;
    a blank checksum counts as not recorded."""
    matched, mismatches, unverified = [], [], []
    for node in sorted(set(expected) | set(observed)):
        registered, restored = expected.get(node) or None, observed.get(node) or None
        row = {"node": node, "expected": registered, "observed": restored}
        if registered is None or restored is None:
            unverified.append(row)
        elif registered == restored:
            matched.append(node)
        else:
            mismatches.append(row)
    return ChecksumComparison(matched, mismatches, unverified)


def checksum_summary(*, matched: int, mismatched_nodes: list[str], unverified: int) -> str:
    """One sentence for the page, the API and the failure reasons, e.g. "Checksums match
    on 2 of 4 nodes/replicas; 2 not verified"."""
    nodes = matched + len(mismatched_nodes) + unverified
    if nodes == unverified:
        return gettext("Checksums not verified (none recorded)")
    if mismatched_nodes:
        named = ", ".join(mismatched_nodes[:NAMED_NODES_MAX])
        more = len(mismatched_nodes) - NAMED_NODES_MAX
        if more > 0:
            named = gettext("%(named)s and %(more)s more") % {"named": named, "more": more}
        sentence = gettext(
            "Checksums differ on %(differ)s of %(nodes)s nodes/replicas (%(named)s)"
        ) % {"differ": len(mismatched_nodes), "nodes": nodes, "named": named}
    else:
        sentence = gettext("Checksums match on %(matched)s of %(nodes)s nodes/replicas") % {
            "matched": matched,
            "nodes": nodes,
        }
    if unverified:
        sentence += gettext("; %(unverified)s not verified") % {"unverified": unverified}
    return sentence
