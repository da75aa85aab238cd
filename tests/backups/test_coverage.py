from apps.backups.coverage import INFERENCE, TRAINING, assess_coverage, items_for


def test_weights_only_inference_is_worded_for_a_person():
    coverage = assess_coverage(INFERENCE, ["model_artifact", "container_images"])
    assert coverage.summary == (
        "Weights only: the quantization parameters, tokenizer config and service config "
        "(ports, env, batching, timeouts, rate limits) are not kept — a restore cannot "
        "reproduce the service."
    )
    assert "The tokenizer config is not kept: the restored model reads and writes" in (
        " ".join(coverage.gaps())
    )
    assert 0 < coverage.score_percent < 40


def test_full_precision_inference_has_no_quantization_item():
    keys = {item.key for item in items_for(INFERENCE, quantized=False)}
    assert "quantization_params" not in keys
    coverage = assess_coverage(INFERENCE, ["model_artifact"], quantized=False)
    assert "quantization" not in coverage.summary


def test_training_checklist_and_scores():
    everything = [item.key for item in items_for(TRAINING)]
    assert assess_coverage(TRAINING, everything).score_percent == 100
    assert assess_coverage(TRAINING, everything).summary == "Everything on the checklist is kept."
    assert (
        assess_coverage(TRAINING, []).summary == "Nothing is kept: a restore cannot resume the run."
    )
    weights = assess_coverage(TRAINING, ["checkpoint_weights"])
    assert weights.summary.startswith("Weights only: the optimizer state, data version and")
    essentials = [item.key for item in items_for(TRAINING) if item.weight == 3]
    partial = assess_coverage(TRAINING, essentials)
    assert partial.summary.startswith("The essentials are kept, but the LR-scheduler state")


def test_keys_of_the_other_side_are_ignored():
    assert assess_coverage(TRAINING, ["model_artifact"]).score_percent == 0
