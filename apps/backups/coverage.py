"""What a backup policy keeps, what it misses, and what a person should be told.

Training backs up the *process* (so a run can resume), inference the *state* (so a bad
release can roll back); PRODUCT.md, "Backups protect different things". Plain Python:
the checklist, the score and the wording; the only Django import marks the wording for
translation, so a page words it in its reader's language.
"""

from dataclasses import dataclass

from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

TRAINING = "training"
INFERENCE = "inference"
BOTH = "both"

# Weight of an item in the score: without an essential item the restore does not work at
# all; without an important one it works but differs; a safeguard protects the backups.
ESSENTIAL, IMPORTANT, SAFEGUARD = 3, 2, 1


@dataclass(frozen=True)
class CoverageItem:
    key: str
    label: str
    applies_to: str
    weight: int
    consequence: str  # what goes wrong without it, said to a person


ITEMS = (
    # Training: the process, so the job resumes where it stopped.
    CoverageItem(
        "checkpoint_weights",
        _("checkpoint weights"),
        TRAINING,
        ESSENTIAL,
        _("the run restarts from step zero"),
    ),
    CoverageItem(
        "optimizer_state",
        _("optimizer state"),
        TRAINING,
        ESSENTIAL,
        _(
            "a resumed run restarts Adam's moments from zero: the loss spikes and the run "
            "no longer matches the one that stopped"
        ),
    ),
    CoverageItem(
        "lr_scheduler_state",
        _("LR-scheduler state"),
        TRAINING,
        IMPORTANT,
        _("the learning rate jumps back to its warm-up value on resume"),
    ),
    CoverageItem(
        "data_version",
        _("data version"),
        TRAINING,
        ESSENTIAL,
        _("nobody can tell which data the checkpoint saw, so a resume may repeat or skip data"),
    ),
    CoverageItem(
        "training_config",
        _("training config"),
        TRAINING,
        ESSENTIAL,
        _("the hyper-parameters and parallel layout have to be guessed on resume"),
    ),
    CoverageItem(
        "random_seed",
        _("random seed"),
        TRAINING,
        IMPORTANT,
        _("data order and dropout differ after a resume, so the run cannot be reproduced"),
    ),
    CoverageItem(
        "container_image",
        _("container image"),
        TRAINING,
        IMPORTANT,
        _("the job resumes on whatever libraries are current, not the ones it ran on"),
    ),
    # Inference: the state, so a bad release rolls back to a known-good one.
    CoverageItem(
        "model_artifact",
        _("model artifact"),
        INFERENCE,
        ESSENTIAL,
        _("there is no model to serve"),
    ),
    CoverageItem(
        "quantization_params",
        _("quantization parameters"),
        INFERENCE,
        ESSENTIAL,
        _("a quantized model cannot be rebuilt bit for bit, so its answers change"),
    ),
    CoverageItem(
        "tokenizer_config",
        _("tokenizer config"),
        INFERENCE,
        ESSENTIAL,
        _("the restored model reads and writes different tokens than the one it replaces"),
    ),
    CoverageItem(
        "post_processing",
        _("post-processing"),
        INFERENCE,
        IMPORTANT,
        _("stop words, filters and output formatting differ from what clients expect"),
    ),
    CoverageItem(
        "service_config",
        _("service config (ports, env, batching, timeouts, rate limits)"),
        INFERENCE,
        ESSENTIAL,
        _(
            "the service comes back with the wrong ports, batching, timeouts or rate limits — "
            "most inference incidents are a new version that does not match its config"
        ),
    ),
    CoverageItem(
        "routing_rules",
        _("gray/canary routing rules"),
        INFERENCE,
        IMPORTANT,
        _("a rollback sends all traffic at once instead of the gray ratio"),
    ),
    CoverageItem(
        "container_images",
        _("container images"),
        INFERENCE,
        IMPORTANT,
        _("the service is rebuilt on whatever images are current"),
    ),
    CoverageItem(
        "monitoring_baseline",
        _("monitoring baseline"),
        INFERENCE,
        SAFEGUARD,
        _("nobody can tell whether the restored service answers as well and as fast as before"),
    ),
    # Both kinds.
    CoverageItem(
        "runtime_pins",
        _("runtime pins (driver, CUDA, framework, lock files)"),
        BOTH,
        IMPORTANT,
        _("it loads on a newer driver or framework but its answers differ"),
    ),
    CoverageItem(
        "data_indexes",
        _("data and indexes (vector index, feature config)"),
        BOTH,
        IMPORTANT,
        _("the model comes back without the index or features it reads from"),
    ),
    CoverageItem(
        "release_records",
        _("release records (gray ratio, rollback steps, validation results, owner)"),
        BOTH,
        IMPORTANT,
        _("nobody knows which version was validated, by whom, or how to roll it back"),
    ),
    CoverageItem(
        "backup_access_control",
        _("backup access control"),
        BOTH,
        SAFEGUARD,
        _("anyone who reaches the storage can read or delete the backups"),
    ),
    CoverageItem(
        "key_management",
        _("key management"),
        BOTH,
        SAFEGUARD,
        _("an encrypted backup whose key is lost cannot be restored"),
    ),
    CoverageItem(
        "encrypted_transfer",
        _("encrypted transfer"),
        BOTH,
        SAFEGUARD,
        _("weights and data cross the network in the clear"),
    ),
)
ITEMS_BY_KEY = {item.key: item for item in ITEMS}
PRIMARY_ITEM = {TRAINING: "checkpoint_weights", INFERENCE: "model_artifact"}
WHAT_A_RESTORE_DOES = {
    TRAINING: _("a restore cannot resume the run"),
    INFERENCE: _("a restore cannot reproduce the service"),
}


# Only a quantized model has quantization parameters to keep.
QUANTIZED_ONLY = frozenset({"quantization_params"})


def items_for(side: str, *, quantized: bool = True) -> tuple[CoverageItem, ...]:
    """The checklist of a training or an inference workload, in display order."""
    if side not in (TRAINING, INFERENCE):
        raise ValueError(f"side must be {TRAINING!r} or {INFERENCE!r}")
    return tuple(
        item
        for item in ITEMS
        if item.applies_to in (side, BOTH) and (quantized or item.key not in QUANTIZED_ONLY)
    )


@dataclass(frozen=True)
class Coverage:
    side: str
    covered: tuple[CoverageItem, ...]
    missing: tuple[CoverageItem, ...]
    score_percent: int
    summary: str  # one sentence for the policy's headline

    @property
    def complete(self) -> bool:
        return not self.missing

    def gaps(self) -> list[str]:
        """One sentence per missing item: what it is and what goes wrong without it."""
        return [
            gettext("The %(item)s is not kept: %(consequence)s.")
            % {"item": item.label, "consequence": item.consequence}
            for item in self.missing
        ]


def assess_coverage(side: str, covered_keys, *, quantized: bool = True) -> Coverage:
    """Score = covered weight ÷ total weight of the side's checklist, in whole percent.

    Keys that do not belong to the side (a checklist kept from before the workload changed
    kind) are ignored.
    """
    checklist = items_for(side, quantized=quantized)
    covered_keys = set(covered_keys or ())
    covered = tuple(item for item in checklist if item.key in covered_keys)
    missing = tuple(item for item in checklist if item.key not in covered_keys)
    total = sum(item.weight for item in checklist)
    score = round(100 * sum(item.weight for item in covered) / total)
    return Coverage(side, covered, missing, score, _summary(side, covered, missing))


def _summary(side, covered, missing) -> str:
    if not missing:
        return gettext("Everything on the checklist is kept.")
    if not covered:
        return gettext("Nothing is kept: %(consequence)s.") % {
            "consequence": WHAT_A_RESTORE_DOES[side]
        }
    essential_missing = [item for item in missing if item.weight == ESSENTIAL]
    primary = PRIMARY_ITEM[side]
    if essential_missing:
        values = {
            "items": _join([item.label for item in essential_missing]),
            "consequence": WHAT_A_RESTORE_DOES[side],
        }
        weights_only = [item.key for item in covered if item.weight == ESSENTIAL] == [primary]
        if len(essential_missing) == 1:
            sentence = (
                gettext("Weights only: the %(items)s is not kept — %(consequence)s.")
                if weights_only
                else gettext("the %(items)s is not kept — %(consequence)s.")
            )
        else:
            sentence = (
                gettext("Weights only: the %(items)s are not kept — %(consequence)s.")
                if weights_only
                else gettext("the %(items)s are not kept — %(consequence)s.")
            )
        return _capitalise(sentence % values)
    labels = [item.label for item in missing]
    sentence = (
        gettext(
            "the essentials are kept, but the %(items)s is not — "
            "a restore works but may not behave like the original."
        )
        if len(labels) == 1
        else gettext(
            "the essentials are kept, but the %(items)s are not — "
            "a restore works but may not behave like the original."
        )
    )
    return _capitalise(sentence % {"items": _join(labels)})


def _join(labels: list[str]) -> str:
    if len(labels) == 1:
        return str(labels[0])
    return gettext("%(items)s and %(last)s") % {
        "items": gettext(", ").join(str(label) for label in labels[:-1]),
        "last": labels[-1],
    }


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]
