"""Checksums registered for a version against those seen after a restore, per node.

A node is *matched* when both sides hold the same checksum, *mismatched* when both sides
hold a checksum and they differ, and *not verified* when either side is blank: a checksum
nobody recorded proves nothing either way, so it is neither a match nor a mismatch. No
Django imports: the drill model, the services and the data migration share it.
"""

from dataclasses import dataclass, field

NODE_WORD = "nodes/replicas"
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
        return "Checksums not verified (none recorded)"
    if mismatched_nodes:
        named = ", ".join(mismatched_nodes[:NAMED_NODES_MAX])
        more = len(mismatched_nodes) - NAMED_NODES_MAX
        sentence = (
            f"Checksums differ on {len(mismatched_nodes)} of {nodes} {NODE_WORD} "
            f"({named}{f' and {more} more' if more > 0 else ''})"
        )
    else:
        sentence = f"Checksums match on {matched} of {nodes} {NODE_WORD}"
    if unverified:
        sentence += f"; {unverified} not verified"
    return sentence
