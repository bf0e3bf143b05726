"""nvidia-smi and nvidia-smi -L in the 580-series format (docs/fidelity.md#gpustack-core)."""
from gpulab.gpustack.hardware import gpu_model, gpu_uuid, mig_uuid
from gpulab.gpustack.mig import plan
from gpulab.gpustack.nvidia_smi import SmiProcess, node_gpus, render, render_list, visible

H100 = gpu_model("H100")
VERSIONS = {"driver_version": "580.105.08", "cuda_version": "13.0"}
BLANK = " " * 89

HEADER = [
    "+-----------------------------------------------------------------------------------------+",
    "| NVIDIA-SMI 580.105.08             Driver Version: 580.105.08     CUDA Version: 13.0     |",
    "+-----------------------------------------+------------------------+----------------------+",
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    "|=========================================+========================+======================|",
]
GPU_RULE = "+-----------------------------------------+------------------------+----------------------+"
PROCESSES_HEADER = [
    BLANK,
    "+-----------------------------------------------------------------------------------------+",
    "| Processes:                                                                              |",
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
    "|        ID   ID                                                               Usage      |",
    "|=========================================================================================|",
]
NO_PROCESSES = [
    "|  No running processes found                                                             |",
    "+-----------------------------------------------------------------------------------------+",
]


def h100_rows(index, bus):
    return [
        f"|   {index}  NVIDIA H100 80GB HBM3          On  |   00000000:{bus}:00.0 Off |                    0 |",
        "| N/A   31C    P0             67W /  700W |       0MiB /  81559MiB |      0%      Default |",
        "|                                         |                        |             Disabled |",
        GPU_RULE,
    ]


def text(lines):
    return "\n".join(lines) + "\n"


def test_whole_h100():
    gpus = node_gpus(H100, "gpu-node-1", 1)
    assert render(gpus, **VERSIONS) == text(HEADER + h100_rows(0, "53") + PROCESSES_HEADER + NO_PROCESSES)


def test_two_gpus_with_a_process():
    gpus = node_gpus(H100, "gpu-node-1", 2)
    process = SmiProcess(gpu=1, pid=4242, name="python", memory_mib=1024)
    assert render(gpus, processes=[process], **VERSIONS) == text(
        HEADER + h100_rows(0, "53") + h100_rows(1, "64") + PROCESSES_HEADER + [
            "|    1  N/A  N/A             4242      C   python                                 1024MiB |",
            "+-----------------------------------------------------------------------------------------+",
        ])


def test_h200_row():
    rows = render(node_gpus(gpu_model("H200"), "n", 1), **VERSIONS).splitlines()[7:9]
    assert rows == [
        "|   0  NVIDIA H200                    Off |   00000000:53:00.0 Off |                    0 |",
        "| N/A   30C    P0             76W /  700W |       0MiB / 143771MiB |      0%      Default |",
    ]


def test_container_given_one_mig_slice_sees_only_it():
    gpus = node_gpus(H100, "gpu-node-1", plan(H100, 1, "all-1g.10gb"))
    first = gpus[0].mig_devices[0]
    container = visible(gpus, [mig_uuid(gpus[0].uuid, first.gpu_instance_id, first.compute_instance_id)])
    assert render(container, **VERSIONS) == text(HEADER + [
        "|   0  NVIDIA H100 80GB HBM3          On  |   00000000:53:00.0 Off |                   On |",
        "| N/A   31C    P0             67W /  700W |                  N/A   |     N/A      Default |",
        "|                                         |                        |              Enabled |",
        GPU_RULE,
        "",
        "+-----------------------------------------------------------------------------------------+",
        "| MIG devices:                                                                            |",
        "+------------------+----------------------------------+-----------+-----------------------+",
        "| GPU  GI  CI  MIG |              Shared Memory-Usage |        Vol|        Shared         |",
        "|      ID  ID  Dev |                Shared BAR1-Usage | SM     Unc| CE ENC  DEC  OFA  JPG |",
        "|                  |                                  |        ECC|                       |",
        "|==================+==================================+===========+=======================|",
        "|  0    7   0   0  |              15MiB /  9984MiB    | 16      0 |  1   0    1    0    1 |",
        "|                  |               0MiB / 16383MiB    |           |                       |",
        "+------------------+----------------------------------+-----------+-----------------------+",
    ] + PROCESSES_HEADER + NO_PROCESSES)
    assert render_list(container) == (
        f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {gpus[0].uuid})\n"
        f"  MIG 1g.10gb     Device  0: (UUID: {mig_uuid(gpus[0].uuid, 7, 0)})\n")


def test_time_sliced_replica_sees_the_whole_gpu():
    gpus = node_gpus(H100, "gpu-node-1", 8)
    replica_view = visible(gpus, [gpus[3].uuid])
    # A replica is the whole GPU, renumbered 0 inside the container but on its real bus.
    assert render(replica_view, **VERSIONS) == text(HEADER + h100_rows(0, "86") + PROCESSES_HEADER + NO_PROCESSES)


def test_list_whole_and_mig():
    assert render_list(node_gpus(H100, "gpu-node-1", 2)) == (
        f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {gpu_uuid('gpu-node-1', 0)})\n"
        f"GPU 1: NVIDIA H100 80GB HBM3 (UUID: {gpu_uuid('gpu-node-1', 1)})\n")
    gpus = node_gpus(H100, "gpu-node-1", plan(H100, 1, "all-1g.10gb"))
    lines = render_list(gpus).splitlines()
    assert len(lines) == 8
    assert lines[7] == f"  MIG 1g.10gb     Device  6: (UUID: {mig_uuid(gpus[0].uuid, 13, 0)})"
