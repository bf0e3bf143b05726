"""Faults of an emulated GPU (gpulab/gpustack/faults.py) as each model of the stack reads them: the device plugin's
health check (k8s-device-plugin internal/rm/health.go), nvidia-smi, dcgm-exporter and the workload's processes."""
from __future__ import annotations

import json

import pytest

from gpulab.cluster.kubelet.images import parse_reference
from gpulab.cluster.kubelet.process import Process
from gpulab.cluster.kubelet.shell import FileSystem, World
from gpulab.gpustack import dcgm, faults
from gpulab.gpustack.faults import Fault, FaultError
from gpulab.gpustack.hardware import gpu_model, gpu_uuid
from gpulab.gpustack.nvidia_smi import lost_gpu, node_gpus, render
from gpulab.gpustack.usage import node_usage
from test_kubelet_harness import CATALOG

START = 1_767_225_600.0
STRUCK = faults.now_rfc3339(START + 3)
H100 = "NVIDIA H100 80GB HBM3"


def test_the_plugin_ignores_application_xids_and_honours_its_environment():
    default = faults.disabled_xids(None, None)
    marked = [x for x in (13, 31, 43, 45, 68, 109, 48, 79) if faults.plugin_marks_unhealthy(Fault(0, x, STRUCK), default)]
    assert marked == [48, 79]
    assert not faults.plugin_marks_unhealthy(Fault(0, None, STRUCK), default)      # thermal: no XID event
    assert not faults.health_checks_run(faults.disabled_xids("all", None))
    assert not faults.plugin_marks_unhealthy(Fault(0, 79, STRUCK), faults.disabled_xids("xids", "79"))
    assert not faults.plugin_marks_unhealthy(Fault(0, 48, STRUCK), faults.disabled_xids("48, x", None))
    assert faults.plugin_marks_unhealthy(Fault(0, 31, STRUCK), faults.disabled_xids(None, "31"))


def test_unknown_xids_are_refused_with_the_known_ones():
    with pytest.raises(FaultError, match=r"XID 13 is not one gpulab emulates; choose one of 31 .*, 48 .*, 79 "):
        faults.check_xid(13)


def test_the_annotation_round_trips_and_a_bad_one_is_no_fault():
    recorded = (Fault(1, 79, STRUCK), Fault(0, None, STRUCK))
    raw = faults.write(recorded)
    assert json.loads(raw) == [{"gpu": 1, "xid": 79, "since": STRUCK}, {"gpu": 0, "thermal": True, "since": STRUCK}]
    assert faults.read({faults.FAULTS_ANNOTATION: raw}) == recorded
    assert faults.read({faults.FAULTS_ANNOTATION: "{not json"}) == ()
    assert faults.write(()) is None


def test_a_process_dies_of_the_fault_that_struck_it_and_always_of_a_lost_gpu():
    ecc = (Fault(0, 48, STRUCK),)
    assert faults.process_error(ecc, 0, START) == 48
    assert faults.process_error(ecc, 0, START + 10) is None           # started after it: runs on
    assert faults.process_error(ecc, 1, START) is None                # another GPU
    assert faults.process_error((Fault(0, 79, STRUCK),), 0, START + 10) == 79
    assert faults.process_error((Fault(0, None, STRUCK),), 0, START) is None


def node(annotation: str | None) -> dict:
    notes = {"gpulab.dev/gpu-model": H100, "gpulab.dev/gpu-count": "2"}
    if annotation:
        notes[faults.FAULTS_ANNOTATION] = annotation
    labels = {"nvidia.com/cuda.driver-version.major": "580", "nvidia.com/cuda.driver-version.minor": "105",
              "nvidia.com/cuda.driver-version.revision": "08"}
    return {"metadata": {"name": "w", "annotations": notes, "labels": labels,
                         "creationTimestamp": "2026-01-01T00:00:00Z"}}


def metric(text: str, field: str, gpu: str) -> str | None:
    return next((line.rsplit(" ", 1)[1] for line in text.splitlines()
                 if line.startswith(field + "{") and f'gpu="{gpu}"' in line), None)


def test_dcgm_shows_the_last_xid_a_slowdown_and_nothing_else_of_a_lost_gpu():
    use = node_usage(node(faults.write((Fault(0, 31, STRUCK), Fault(0, 48, faults.now_rfc3339(START + 9)),
                                        Fault(1, None, STRUCK)))), [])
    text = dcgm.render(use, hostname="w", uptime_s=10)
    assert (metric(text, "DCGM_FI_DEV_XID_ERRORS", "0"), metric(text, "DCGM_FI_DEV_XID_ERRORS", "1")) == ("48", "0")
    idle_clock = int(metric(text, "DCGM_FI_DEV_SM_CLOCK", "0"))
    assert int(metric(text, "DCGM_FI_DEV_SM_CLOCK", "1")) == idle_clock // 2
    assert metric(text, "DCGM_FI_DEV_GPU_TEMP", "1") == str(faults.THERMAL_SLOWDOWN_TEMPERATURE_C)
    lost = dcgm.render(node_usage(node(faults.write((Fault(1, 79, STRUCK),))), []), hostname="w", uptime_s=10)
    assert metric(lost, "DCGM_FI_DEV_XID_ERRORS", "1") == "79"
    assert metric(lost, "DCGM_FI_DEV_GPU_TEMP", "1") is None and metric(lost, "DCGM_FI_DEV_GPU_TEMP", "0")


def test_nvidia_smi_counts_the_ecc_error_and_gives_up_on_a_lost_gpu():
    use = node_usage(node(faults.write((Fault(1, 48, STRUCK),))), [])
    table = render(use.gpus, driver_version="580.105.08", cuda_version="13.0")
    rows = [line for line in table.splitlines() if "00000000:" in line]
    assert [row.rstrip("|").split()[-1] for row in rows] == ["0", "1"]      # Volatile Uncorr. ECC
    assert lost_gpu(use.gpus) is None
    gone = node_usage(node(faults.write((Fault(1, 79, STRUCK),))), []).gpus
    assert lost_gpu(gone) == ("Unable to determine the device handle for GPU 0000:64:00.0: GPU is lost.  "
                              "Reboot the system to recover this GPU\n")
    assert lost_gpu(node_gpus(gpu_model(H100), "w", 2)) is None


def trainer(annotations: dict[str, str], start: float = START) -> Process:
    img = CATALOG.resolve(parse_reference("nvcr.io/nvidia/pytorch:24.05-py3"))
    world = World(image=img, catalog=CATALOG, env=[("NVIDIA_VISIBLE_DEVICES", gpu_uuid("w", 1))], files=FileSystem(),
                  hostname="t", nproc=4, kernel="6.8.0-gpulab", node_labels=lambda: {"kubernetes.io/hostname": "w"},
                  node_annotations=lambda: annotations)
    proc = Process(world, ["python", "train.py"], start)
    proc.advance(start + 1)
    return proc


def test_a_training_program_dies_with_the_cuda_error_of_a_fault_on_its_gpu():
    notes = dict(node(None)["metadata"]["annotations"])
    proc = trainer(notes)
    assert proc.running and not proc.log
    notes[faults.FAULTS_ANNOTATION] = faults.write((Fault(0, 48, STRUCK),))     # not its GPU
    proc.advance(START + 5)
    assert proc.running
    notes[faults.FAULTS_ANNOTATION] = faults.write((Fault(0, 48, STRUCK), Fault(1, 48, STRUCK)))
    proc.advance(START + 7)
    assert (proc.exit_code, [line for _, line in proc.log]) == (1, ["RuntimeError: CUDA error: uncorrectable ECC "
                                                                    "error encountered"])
    assert trainer(notes, START + 10).running                           # a new process after the error runs on
    notes[faults.FAULTS_ANNOTATION] = faults.write((Fault(1, 79, STRUCK),))
    again = trainer(notes, START + 10)
    assert (again.exit_code, [line for _, line in again.log]) == (1, ["RuntimeError: CUDA error: unknown error"])


def test_the_plugin_marks_one_replica_on_an_event_and_every_device_of_a_lost_gpu_at_start():
    from gpulab.gpustack.deviceplugin import Device, unhealthy_devices

    replicas = {"nvidia.com/gpu": [Device(f"{gpu_uuid('w', i)}::{n}", gpu_uuid("w", i), i)
                                   for i in range(2) for n in range(4)]}
    default = faults.disabled_xids(None, None)
    # An XID while the plugin runs: parentToDeviceMap keeps one device per GPU UUID.
    seen = unhealthy_devices(replicas, (Fault(1, 48, STRUCK),), START, default)
    assert seen == {f"{gpu_uuid('w', 1)}::3"}
    # The same XID before the plugin started: never seen; a GPU off the bus: no handle for any of its devices.
    assert unhealthy_devices(replicas, (Fault(1, 48, STRUCK),), START + 10, default) == set()
    lost = unhealthy_devices(replicas, (Fault(1, 79, STRUCK),), START + 10, default)
    assert lost == {f"{gpu_uuid('w', 1)}::{n}" for n in range(4)}
    assert unhealthy_devices(replicas, (Fault(1, 31, STRUCK), Fault(0, None, STRUCK)), START, default) == set()


def test_a_counters_file_keeps_the_known_fields_and_refuses_a_bad_type():
    collected = dcgm.parse_counters("# comment\n\nDCGM_FI_DEV_XID_ERRORS, gauge, last XID\n"
                                    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, DBEs\n"
                                    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, counter, no figure here\n")
    assert [(c.field, c.type, c.help, c.value) for c in collected] == [
        ("DCGM_FI_DEV_XID_ERRORS", "gauge", "last XID", "xid"), ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "DBEs",
                                                                  "ecc_dbe")]
    with pytest.raises(dcgm.CountersError, match="could not find Prometheus metric type gage"):
        dcgm.parse_counters("DCGM_FI_DEV_XID_ERRORS, gage, x\n")
    use = node_usage(node(faults.write((Fault(1, 48, STRUCK), Fault(1, 48, STRUCK)))), [])
    text = dcgm.render(use, hostname="w", uptime_s=1, collected=collected)
    assert metric(text, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "1") == "2" and "DCGM_FI_DEV_GPU_TEMP" not in text
