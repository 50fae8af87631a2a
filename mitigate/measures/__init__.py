"""Measures of a judge's accuracy and bias, and the statistics behind their intervals and tests.

One module per family, each citing the papers it comes from: agreement with humans
(``_agreement``), consistency under perturbation (``_consistency``), likelihood bias
(``_likelihood_bias``), score distribution and anchoring (``_distribution``), reliability
(``_reliability``), self-bias (``_self_bias``), pairwise measures (``_pairwise``), length and style
control (``_style``), panels of judges (``_panel``), TrustJudge's
inconsistencies (``_pairwise_distribution``), Bradley-Terry rankings (``_bradley_terry``), bias
probes (``_robustness``); beneath them the statistics (``_stats``, ``_paired``) and what every
measure shares (``_base``: the :class:`Measure` result and the registered measures ``mitigate
compare`` reports, each one function decorated with :func:`reported_measure`).

Importing the package does not import scipy, sklearn or matplotlib; the functions that need
scipy import it when called.
"""

from typing import TYPE_CHECKING

from mitigate._lazy import lazy_exports

if TYPE_CHECKING:
    from mitigate.measures._agreement import (
        accuracy,
        correct_preferences,
        document_correlation,
        item_correlation,
        meta_correlation,
        per_system_correlation,
        system_correlation,
    )
    from mitigate.measures._base import (
        MEASURES,
        EntryData,
        Labels,
        Measure,
        MeasureInfo,
        ReportedMeasure,
        Scores,
        Task,
        batched_nanmean,
        human_scores,
        is_missing,
        item_doc_ids,
        item_systems,
        label_key,
        labels_equal,
        measure_table,
        output_lengths,
        reported_measure,
        word_count,
    )
    from mitigate.measures._bradley_terry import (
        BradleyTerryFit,
        comparisons_from_verdicts,
        fit_bradley_terry,
        majority_cycles,
    )
    from mitigate.measures._consistency import (
        accuracy_under_perturbation,
        chance_consistency,
        consistency_kappa,
        perturbation_consistency,
    )
    from mitigate.measures._distribution import (
        anchoring,
        correlation_by_position,
        inter_criterion_correlation,
        round_number_excess,
        scale_coverage,
        score_entropy,
        score_histogram,
    )
    from mitigate.measures._likelihood_bias import (
        US_SCALINGS,
        bias_score,
        centre_unit_range,
        familiarity,
        rs_scores,
        unfairness_scores,
    )
    from mitigate.measures._paired import paired_mean_difference, paired_statistic_difference, swap_refusal
    from mitigate.measures._pairwise import (
        PREFERENCES,
        abstained,
        accuracy_both_orders,
        longer_preference,
        pair_category,
        position_bias,
        position_consistency,
        preference_accuracy,
        preference_fairness,
        presented_to_text,
        reconcile,
        repetition_stability,
        swap_gain,
        verdict_orders,
        verdict_samples,
        verdicts_as_text,
    )
    from mitigate.measures._pairwise_distribution import (
        both_orders_relation,
        preference_verdict,
        score_pair_conflict,
        transitivity_violations,
        verdict_relation,
    )
    from mitigate.measures._panel import (
        DawidSkeneModel,
        Kind,
        dawid_skene_posterior,
        effective_votes,
        fit_dawid_skene,
        gold_check,
        member_confusion,
        panel_votes,
        score_class,
    )
    from mitigate.measures._reliability import (
        alpha_across_samples,
        alpha_across_settings,
        bin_to_scale,
        krippendorff_alpha,
    )
    from mitigate.measures._robustness import (
        ProbeEffect,
        directional_share,
        flip_test,
        mcnemar_one_sided,
        noise_floor,
        preference_for,
        probe_effect,
        robustness_rate,
        score_shift,
    )
    from mitigate.measures._self_bias import length_correlation, self_preference, source_sensitivity
    from mitigate.measures._stats import (
        CORRELATIONS,
        MIN_DOCUMENTS,
        MIN_ITEMS,
        bootstrap_ci,
        complete_pairs,
        correlation_function,
        spearman,
    )
    from mitigate.measures._style import (
        STYLE_FEATURES,
        length_controlled_win_rate,
        pairs_against,
        score_style_regression,
        style_controlled_win_rate,
        style_features,
    )

__getattr__, __dir__, __all__ = lazy_exports(__name__)
