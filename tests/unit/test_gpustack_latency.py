"""The sharing latency model against the H200 measurement (docs/fidelity.md#gpustack-core)."""
import pytest

from gpulab.gpustack.latency import (MPS_CONTENTION, device_plugin_thread_percentage, expected_latency, measured_rows,
                                     request_ms_default, tail_ratio, time_slice_ms)

# Stated tolerances (relative error of the model against each measured row).
# Run 1 is the calibration run; run 2 (other sizes, partial duty, requests every
# 6 ms) shows shorter slices than the model assumes, hence the wider bounds.
TOLERANCE = {1: {"p50_ms": 0.25, "p99_ms": 0.05}, 2: {"p50_ms": 0.35, "p99_ms": 0.55}}


def _request_ms(row, rows):
    """The request's own p50: run 1 uses its idle row; run 2 the idle row of the same size."""
    if row["run"] == 1:
        return request_ms_default()
    alone = [r for r in rows if r["run"] == 2 and r["size"] == row["size"] and r["neighbours"] == 0]
    return alone[0]["p50_ms"] if alone else request_ms_default()


@pytest.mark.parametrize("row", measured_rows(), ids=lambda r: f"run{r['run']}-{r['size']}-k{r['neighbours']}-d{r['duty']}")
def test_model_tracks_every_measured_row(row):
    rows = measured_rows()
    model = expected_latency("time-slicing", neighbours=row["neighbours"], duty=row["duty"],
                             request_ms=_request_ms(row, rows))
    for key, tolerance in TOLERANCE[row["run"]].items():
        assert model[key] == pytest.approx(row[key], rel=tolerance), key


def test_calibration_constants():
    assert request_ms_default() == pytest.approx(0.4396)
    assert tail_ratio() == pytest.approx(1.1021, abs=1e-4)
    assert time_slice_ms() == pytest.approx(2.3405, abs=1e-4)


def test_exclusive_gpu_is_the_request_alone():
    assert expected_latency("exclusive") == {"p50_ms": 0.4396, "p99_ms": 0.4845}


def test_each_busy_neighbour_costs_about_one_time_slice_of_p99():
    p99 = [expected_latency("time-slicing", neighbours=k)["p99_ms"] for k in range(5)]
    steps = [b - a for a, b in zip(p99, p99[1:])]
    assert steps == pytest.approx([time_slice_ms()] * 4, abs=1e-3)


def test_idle_neighbours_cost_nothing():
    assert expected_latency("time-slicing", neighbours=4, duty=0.0) == expected_latency("exclusive")


def test_mig_slice_is_isolated_and_scaled_by_its_sms():
    slice_alone = expected_latency("mig", mig_profile="1g.18gb")
    assert slice_alone == expected_latency("mig", mig_profile="1g.18gb", neighbours=6)
    assert slice_alone["p50_ms"] == pytest.approx(0.4396 * 132 / 16, abs=1e-3)
    assert expected_latency("mig", mig_profile="7g.141gb")["p50_ms"] == pytest.approx(0.4396)


def test_mps_lies_between_a_whole_gpu_and_time_slicing_at_low_load():
    for k in (1, 2):
        exclusive, mps, sliced = (expected_latency(mode, neighbours=k) for mode in ("exclusive", "mps", "time-slicing"))
        for key in ("p50_ms", "p99_ms"):
            assert exclusive[key] < mps[key] < sliced[key], (k, key)
    assert expected_latency("mps") == expected_latency("exclusive")             # alone, no limit: a whole GPU
    assert expected_latency("mps", neighbours=4, duty=0.0) == expected_latency("exclusive")


def test_mps_degrades_monotonically_with_busy_neighbours():
    for percentage in (None, 50, 25, 10):
        p99 = [expected_latency("mps", neighbours=k, active_thread_percentage=percentage)["p99_ms"] for k in range(9)]
        assert all(a <= b for a, b in zip(p99, p99[1:])), (percentage, p99)
        assert p99[-1] > p99[0]
    unlimited = [expected_latency("mps", neighbours=k)["p99_ms"] for k in range(5)]
    assert all(a < b for a, b in zip(unlimited, unlimited[1:]))               # every busy neighbour takes SMs
    # one busy neighbour: half the SMs and the bandwidth penalty
    assert unlimited[1] == pytest.approx(0.4396 * tail_ratio() * 2 * (1 + MPS_CONTENTION), abs=1e-3)


def test_mps_thread_limit_caps_the_request_at_its_share_of_sms():
    alone = expected_latency("mps", active_thread_percentage=25)
    assert alone["p50_ms"] == pytest.approx(0.4396 * 4, abs=1e-3)               # 25 % of the SMs: 4x the time
    assert alone["p50_ms"] > expected_latency("mps")["p50_ms"]
    # with 4 replicas of 25 %, the neighbours' limits leave the request its quarter: only the bandwidth penalty
    shared = [expected_latency("mps", neighbours=k, active_thread_percentage=25)["p50_ms"] for k in range(4)]
    assert shared[1:] == pytest.approx([alone["p50_ms"] * (1 + MPS_CONTENTION)] * 3, abs=1e-3)
    # more busy clients than the limits allow for: the SMs are split evenly
    assert expected_latency("mps", neighbours=7, active_thread_percentage=25)["p50_ms"] == pytest.approx(
        0.4396 * 8 * (1 + MPS_CONTENTION), abs=1e-3)


def test_mps_p50_counts_the_median_busy_neighbours_and_p99_all_of_them():
    half = expected_latency("mps", neighbours=1, duty=0.5)
    assert half["p50_ms"] == expected_latency("exclusive")["p50_ms"]
    assert half["p99_ms"] == expected_latency("mps", neighbours=1)["p99_ms"]
    assert expected_latency("mps", neighbours=4, duty=0.5)["p50_ms"] == expected_latency("mps", neighbours=2)["p50_ms"]


def test_device_plugin_thread_percentage_is_100_over_replicas_in_integers():
    assert [device_plugin_thread_percentage(n) for n in (1, 2, 3, 4, 7)] == [100, 50, 33, 25, 14]
    with pytest.raises(ValueError, match="replicas must be >= 1"):
        device_plugin_thread_percentage(0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown mode 'mpx'"):
        expected_latency("mpx")
    with pytest.raises(ValueError, match="mode 'mig' needs mig_profile"):
        expected_latency("mig")
    with pytest.raises(ValueError, match="it applies to mode 'mps', not 'time-slicing'"):
        expected_latency("time-slicing", active_thread_percentage=50)
    with pytest.raises(ValueError, match=r"active_thread_percentage must lie in \(0, 100\], got 0"):
        expected_latency("mps", active_thread_percentage=0)
