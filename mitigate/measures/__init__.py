"""Measures of a judge's accuracy and bias, and the statistics behind their intervals and tests.

One module per family, each citing the papers it comes from:

- :mod:`~mitigate.measures._agreement`: correlations with humans at item, document and
  system level, per-system P_i, meta-correlation M, #CP, accuracy;
- :mod:`~mitigate.measures._consistency`: consistency under guideline perturbation, its
  chance level and kappa, accuracy per perturbation;
- :mod:`~mitigate.measures._likelihood_bias`: US, RS, BiasScore, familiarity;
- :mod:`~mitigate.measures._distribution`: histogram, scale coverage, round-number excess,
  entropy; inter-criterion correlation, anchoring, correlation by position;
- :mod:`~mitigate.measures._reliability`: Krippendorff's alpha across samples and settings;
- :mod:`~mitigate.measures._self_bias`: self-preference, length correlation, source sensitivity;
- :mod:`~mitigate.measures._pairwise`: accuracy against gold preferences, position consistency,
  preference fairness and repetition stability (Shi et al. 2024), length lean, position-swap gain;
- :mod:`~mitigate.measures._length_control`: length-controlled win rate (Dubois et al. 2024);
- :mod:`~mitigate.measures._style`: style control (markdown headers, bold, lists, length as
  covariates of the controlled win rate and of the score regression; Arena-Hard);
- :mod:`~mitigate.measures._panel`: panels of judges: Dawid-Skene confusion matrices per member,
  the effective number of votes (Kish), member confusion;
- :mod:`~mitigate.measures._pairwise_distribution`: score-vs-pair conflict and preference cycles
  (TrustJudge);
- :mod:`~mitigate.measures._bradley_terry`: Bradley-Terry rankings of systems with intervals and
  majority cycles;
- :mod:`~mitigate.measures._robustness`: bias-probe measures (CALM's robustness rate, shift,
  noise floor, probe-vs-rerun test);
- :mod:`~mitigate.measures._stats`: correlations, bootstrap intervals, permutation tests;
- :mod:`~mitigate.measures._base`: the :class:`Measure` result, shared helpers, and the
  registered :class:`ReportedMeasure` table ``mitigate compare`` reads.

Every public function is importable from here (``from mitigate.measures import
item_correlation``). Importing the package does not import scipy, sklearn or matplotlib:
the few functions that need scipy import it when called. Nothing here imports anything
above :mod:`mitigate.judge`.
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
        perturbation_outputs,
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
    from mitigate.measures._length_control import fit_length_glm, length_controlled_win_rate, pairs_against
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
        POSITION_VERDICTS,
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
        member_confusion,
        panel_votes,
        score_class,
    )
    from mitigate.measures._reliability import (
        alpha_across_samples,
        alpha_across_settings,
        bin_to_scale,
        krippendorff_alpha,
        sample_rows,
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
        score_style_regression,
        style_controlled_win_rate,
        style_features,
    )

__getattr__, __dir__, __all__ = lazy_exports(__name__)
