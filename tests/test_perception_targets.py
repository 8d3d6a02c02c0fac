"""Issue 6's targets read with their uncertainty (vision/targets.py): a figure from 60 tables is
a sample, so each share carries its 95 % interval and a target inside it is "within noise"."""
from __future__ import annotations

import pytest

from vision.targets import judge, share_verdict, target_rows, wilson_pct


def test_no_hits_in_ten_trials_still_allows_more_than_a_quarter():
    assert wilson_pct(0, 10) == (0.0, 27.75)


def test_every_hit_in_ten_trials_still_allows_less_than_three_quarters():
    assert wilson_pct(10, 10) == (72.25, 100.0)


@pytest.mark.parametrize("hits, trials", [(0, 7), (3, 40), (891, 900), (5390, 5400)])
def test_the_interval_is_the_wilson_score_interval_scipy_computes(hits, trials):
    from scipy.stats import binomtest

    ref = binomtest(hits, trials).proportion_ci(0.95, method="wilson")
    lo, hi = wilson_pct(hits, trials)
    assert lo == pytest.approx(100 * ref.low, abs=0.006) and hi == pytest.approx(100 * ref.high, abs=0.006)


def test_the_interval_holds_the_share_and_narrows_as_tables_are_pooled():
    one = wilson_pct(891, 900)  # 99.0 %
    six = wilson_pct(6 * 891, 6 * 900)
    assert one[0] < 99.0 < one[1] and six[0] < 99.0 < six[1]
    assert six[1] - six[0] < (one[1] - one[0]) / 2


def test_no_trials_is_not_measured():
    assert wilson_pct(0, 0) is None and share_verdict(None, 99.0) == "not measured"


@pytest.mark.parametrize("hits, trials, verdict", [
    (5390, 5400, "met"),  # 99.81 %, interval 99.66-99.90
    (893, 900, "within noise"),  # 99.22 %: meets 99 on its face, but the interval reaches 98.4
    (880, 900, "missed"),  # 97.78 %, interval 96.6-98.6
])
def test_a_share_meets_its_target_only_where_its_whole_interval_does(hits, trials, verdict):
    assert share_verdict(wilson_pct(hits, trials), 99.0) == verdict


def _summary(unflagged: int, scored: int = 1000) -> dict:
    return {"color_size_accuracy_pct": 96.0, "orientation_accuracy_pct": 99.5,
            "position_error_mm": {"median": 0.8}, "axis_error_deg": {"median": 2.4},
            "marks": {"scored": scored, "wrong_unflagged": unflagged}}


def test_every_target_of_the_issue_is_judged():
    t = judge(_summary(0), {"cls_ok": 960, "matched": 1000, "orient_ok": 995, "orient_n": 1000})
    assert set(t) == {"color_size_accuracy_pct", "orientation_accuracy_pct", "position_error_mm_median",
                      "axis_error_deg_median", "wrong_marks_unflagged"}
    assert t["color_size_accuracy_pct"]["verdict"] == "missed"
    assert t["orientation_accuracy_pct"]["verdict"] == "within noise"
    assert t["position_error_mm_median"]["verdict"] == "met" and t["axis_error_deg_median"]["verdict"] == "missed"
    assert t["orientation_accuracy_pct"]["ci95_pct"] == [98.83, 99.79]


def test_no_wrong_mark_unflagged_is_met_with_the_rate_it_still_allows():
    met = judge(_summary(0, 4000), {"cls_ok": 1, "matched": 1, "orient_ok": 1, "orient_n": 1})["wrong_marks_unflagged"]
    assert met["verdict"] == "met" and met["rate_upper95_per_1000_marks"] == 0.75
    missed = judge(_summary(1, 4000), {"cls_ok": 1, "matched": 1, "orient_ok": 1, "orient_n": 1})["wrong_marks_unflagged"]
    assert missed["verdict"] == "missed" and missed["rate_upper95_per_1000_marks"] is None


def test_the_readable_table_says_each_verdict():
    rows = dict(target_rows(judge(_summary(0), {"cls_ok": 960, "matched": 1000, "orient_ok": 995, "orient_n": 1000})))
    assert rows["target: orientation >= 99.0 %"] == "99.5  (95 % CI 98.83-99.79)  -> within noise"
