"""The report of a long run stays readable and small: a per-message scatter keeps each time
bin's extremes, and the acks-per-second bars widen past ``RATE_BARS`` seconds."""

from __future__ import annotations

import numpy as np

from pytest_kreplica.report.data import RATE_BARS, _rate, load
from pytest_kreplica.report.plots import SCATTER_BINS, extremes, series_svg
from tests.report.synthetic import make_run


def test_a_long_scatter_keeps_each_bins_extremes_and_its_spike():
    t = np.linspace(0.0, 7200.0, 1_000_000)
    v = np.full(len(t), 5.0)
    v[123_456] = 9_000.0  # one spike (a fault's stalled ack)
    v[654_321] = 0.5
    kept_t, kept_v = extremes(t, v)
    assert len(kept_t) <= 2 * SCATTER_BINS
    assert kept_v.max() == 9_000.0 and kept_v.min() == 0.5
    assert t[123_456] in kept_t
    assert np.all(np.diff(kept_t) >= 0)  # still in time order


def test_a_short_scatter_is_drawn_whole():
    t, v = np.arange(100.0), np.arange(100.0)
    kept_t, kept_v = extremes(t, v)
    assert len(kept_t) == 100 and kept_v.tolist() == v.tolist()


def test_the_rate_bars_widen_past_their_count_and_still_say_acks_per_second():
    t0 = 0
    acks = (np.arange(0, 3 * RATE_BARS * 10) * 1e8).astype(np.int64)  # 10 acks/s, 3x long
    grid = np.linspace(0.0, acks[-1] / 1e9, 50)
    rate = _rate(acks, grid, t0)
    assert len(rate.t) <= RATE_BARS + 1
    assert np.isclose(np.median(rate.values), 10.0, rtol=1e-3)
    short = _rate(acks[:200], np.linspace(0.0, 20.0, 50), t0)
    assert short.t[1] - short.t[0] == 1.0


def test_the_series_plot_of_many_acks_is_not_drawn_point_by_point(tmp_path):
    make_run(tmp_path, messages=60_000)
    data = load(tmp_path)
    assert len(data.ack_latency.values) > 4 * SCATTER_BINS
    svg = series_svg(data)
    # one marker per ack made ~100 bytes of SVG each; the extremes keep it a few thousand
    assert svg.count("<use ") <= 2 * SCATTER_BINS + 10, svg.count("<use ")
