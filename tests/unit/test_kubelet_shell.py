"""The container command interpreter: the shell subset, the utilities, PID 1 and the stop signal."""
from __future__ import annotations

import time

import pytest

from gpulab.cluster.kubelet.images import parse_reference
from gpulab.cluster.kubelet.process import LOG_BYTES_KEPT, Process
from gpulab.cluster.kubelet.shell import FileSystem, World
from gpulab.cluster.kubelet.shell.limits import MEMORY_CAP, Budget, memory_limit
from test_kubelet_harness import CATALOG
START = 1_767_225_600.0   # 2026-01-01T00:00:00Z


def make_world(image: str = "busybox", env: tuple = (), mounted: dict | None = None) -> World:
    img = CATALOG.resolve(parse_reference(image))
    files = FileSystem()
    for d in ("/tmp", "/etc", "/dev", "/root"):
        files.mkdirs(d)
    files.add_file("/etc/hostname", "mypod\n")
    files.add_file("/config/model.txt", "llama-3-8b\n")
    files.add_file("/scripts/run.sh", "#!/bin/sh\necho script says $1\n", 0o755)
    return World(image=img, catalog=CATALOG, env=[*img.env, ("HOSTNAME", "mypod"), *env], files=files,
                 hostname="mypod", nproc=4, kernel="6.8.0-gpulab", mounted=mounted or {})


def run(script_or_argv, image: str = "busybox", until: float = 10_000, **kw) -> tuple[str, int | None, Process]:
    argv = ["sh", "-c", script_or_argv] if isinstance(script_or_argv, str) else script_or_argv
    proc = Process(make_world(image, **kw), argv, START)
    proc.advance(START + until)
    while proc.computing:   # what the node agent's CPU does: another slice, until the program waits or ends
        proc.advance(START + until)
    return "".join(line + "\n" for _, line in proc.log), proc.exit_code, proc


@pytest.mark.parametrize("script,out,code", [
    ("echo hello; exit 3", "hello\n", 3),
    ("echo 'single $HOME' \"double $HOSTNAME\" esc\\ aped", "single $HOME double mypod esc aped\n", 0),
    ("x=1; y=\"$x two\"; echo $y ${y}s ${#y} ${NOPE:-fallback} ${NOPE-} end", "1 two 1 twos 5 fallback end\n", 0),
    ("f=model.tar.gz; echo ${f%%.*} ${f#*.} ${f%.gz}", "model tar.gz model.tar\n", 0),
    ("echo $((3 * (4 + 1) % 7)) $((10 / 3)) $((-7 / 2)) $((2 > 1 && 0 || 1))", "1 3 -3 1\n", 0),
    ("for i in 1 2 3; do echo -n $i; done; echo", "123\n", 0),
    ("i=0; while [ $i -lt 3 ]; do i=$((i+1)); done; echo $i; until true; do :; done", "3\n", 0),
    ("if [ -f /etc/hostname ] && [ \"$(cat /etc/hostname)\" = mypod ]; then echo yes; elif true; then echo no; "
     "else echo never; fi", "yes\n", 0),
    ("false || echo rescued; true && echo chained; ! true; echo $?", "rescued\nchained\n1\n", 0),
    ("printf '%s=%d|%5.2f|%-4s|\\n' gpus 8 3.14159 ab", "gpus=8| 3.14|ab  |\n", 0),
    ("printf '%s\\n' a b c | grep -v b | wc -l", "2\n", 0),
    ("seq 1 5 | head -n 2; seq 3 | tail -n 1; echo b a | tr 'a-z ' 'A-Z_'; echo a:b:c | cut -d: -f2-",
     "1\n2\n3\nB_A\nb:c\n", 0),
    ("cat /config/model.txt | grep -c llama; grep -q nothing /config/model.txt; echo $?", "1\n1\n", 0),
    ("echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f; cat /nope 2>&1", "one\ntwo\ncat: can't open '/nope': "
     "No such file or directory\n", 1),
    ("(exit 4); echo $?; { echo grouped; }; echo $(echo nested $(hostname))", "4\ngrouped\nnested mypod\n", 0),
    ("set -e; echo before; false; echo after", "before\n", 1),
    ("/scripts/run.sh hello; sh /scripts/run.sh again", "script says hello\nscript says again\n", 0),
    ("env | grep HOSTNAME; printenv PATH; printenv MISSING; echo $?",
     "HOSTNAME=mypod\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n1\n", 0),
    ("uname; uname -r; nproc; whoami; id; pwd", "Linux\n6.8.0-gpulab\n4\nroot\nuid=0(root) gid=0(root) "
     "groups=0(root),10(wheel)\n/\n", 0),
    ("date; date -u +%Y-%m-%dT%H:%M:%SZ; date +%s", "Thu Jan  1 00:00:00 UTC 2026\n2026-01-01T00:00:00Z\n1767225600\n", 0),
])
def test_scripts(script, out, code):
    output, exit_code, _ = run(script)
    assert (output, exit_code) == (out, code)


@pytest.mark.parametrize("image,shell,message", [
    ("busybox", "sh", "sh: trainer: not found"),
    ("ubuntu:24.04", "sh", "sh: 1: trainer: not found"),
    ("ubuntu:24.04", "bash", "bash: line 1: trainer: command not found"),
])
def test_a_program_missing_from_the_image_is_not_found_by_the_shell(image, shell, message):
    output, code, _ = run([shell, "-c", "echo start; trainer --epochs 3"], image)
    assert (output, code) == (f"start\n{message}\n", 127)


def test_syntax_errors_read_like_dash():
    assert run("if true; then echo x", "ubuntu:24.04")[:2] == \
        ('sh: 1: Syntax error: end of file unexpected (expecting "fi")\n', 2)


def test_sleep_takes_the_time_it_says():
    output, code, proc = run("echo a; sleep 1.5; echo b; sleep 2m; echo c")
    stamps = [ns for ns, _ in proc.log]
    assert output == "a\nb\nc\n" and code == 0
    assert (stamps[1] - stamps[0], stamps[2] - stamps[1]) == (1_500_000_000, 120_000_000_000)
    partial = Process(make_world(), ["sh", "-c", "echo a; sleep 10; echo b"], START)
    partial.advance(START + 5)
    assert [line for _, line in partial.log] == ["a"] and partial.running and partial.wake == START + 10


@pytest.mark.parametrize("argv", [["sleep", "infinity"], ["tail", "-f", "/dev/null"],
                                  ["sh", "-c", "while true; do :; done"], ["python3", "-m", "http.server"]])
def test_programs_that_never_end(argv):
    _, code, proc = run(argv, "python:3.12" if argv[0] == "python3" else "busybox")
    assert code is None and proc.running and proc.wake is None


def test_a_busy_program_computes_a_slice_at_a_time():
    proc = Process(make_world(), ["sh", "-c", "while true; do :; done"], START)
    started = time.perf_counter()
    proc.advance(START + 1)
    assert proc.computing and proc.running and time.perf_counter() - started < 0.05
    slices = 1
    while proc.computing:
        proc.advance(START + 1)
        slices += 1
    assert slices > 10 and proc.running and proc.wake is None   # then busy for ever, costing nothing more


@pytest.mark.parametrize("script", ["x=a; while true; do x=$x$x; done", "x=a; while true; do x=\"$x$x\"; done",
                                    "x=a; while true; do echo $x$x > /tmp/f; x=$(cat /tmp/f); done",
                                    "printf '%999999999s' x", "x=a; while :; do x=$(echo $x$x); done"])
def test_a_program_over_its_memory_limit_is_killed_as_the_oom_killer_does(script):
    output, code, proc = run(script)
    assert code == 137 and proc.oom_killed and not proc.running


def test_the_memory_limit_is_the_containers_up_to_the_emulations_cap():
    assert memory_limit({"resources": {"limits": {"memory": "1Mi"}}}) == 1024 * 1024
    assert memory_limit({"resources": {"requests": {"memory": "1Ti"}}}) == MEMORY_CAP
    assert memory_limit({"resources": {"limits": {"memory": "1Ti"}}}) == MEMORY_CAP
    world = make_world()
    world.budget = Budget(memory=1024 * 1024)
    proc = Process(world, ["sh", "-c", "x=a; while true; do x=$x$x; echo ${#x}; done"], START)
    proc.advance(START + 1)
    while proc.computing:
        proc.advance(START + 1)
    assert proc.exit_code == 137 and proc.log[-1][1] == str(1024 * 1024)


def test_the_log_keeps_its_last_10_mib_as_the_current_rotated_file():
    _, code, proc = run("x=$(printf '%1048570s' a); i=0; while [ $i -lt 12 ]; do echo \"$i$x\"; i=$((i+1)); done")
    kept = [line[:2].strip() for _, line in proc.log]
    assert code == 0 and kept == [str(i) for i in range(2, 12)]
    assert sum(len(line) + 1 for _, line in proc.log) <= LOG_BYTES_KEPT


def test_arithmetic_is_64_bit_as_the_shells_intmax_t():
    assert run("echo $((9223372036854775807 + 1)) $((1 << 64)) $((1 << 63)) $((3 * 4611686018427387904))")[:2] == \
        ("-9223372036854775808 1 -9223372036854775808 -4611686018427387904\n", 0)


def test_the_stop_signal_follows_pid_1():
    _, _, shell_pid1 = run("sleep 3600", until=5)   # dash and ash exec a lone command: sleep is PID 1 and ignores it
    assert shell_pid1.stop(START + 10) is False and shell_pid1.running
    shell_pid1.kill(START + 40)
    assert shell_pid1.exit_code == 137
    _, _, server = run(["python3", "-m", "http.server"], "python:3.12")
    assert server.stop(START + 10) is True and server.exit_code == 143
    _, _, nginx = run(["/docker-entrypoint.sh", "nginx", "-g", "daemon off;"], "nginx:1.27")
    assert nginx.stop(START + 10) is True and nginx.exit_code == 0
    assert [line for _, line in nginx.log][-2:] == ["2026/01/01 00:00:10 [notice] 1#1: signal 3 (SIGQUIT) received, "
                                                    "shutting down", "2026/01/01 00:00:10 [notice] 1#1: exit"]
    _, _, script = run("echo starting; sleep 3600", "nginx:1.27", until=5)   # a script: sh stays PID 1
    assert script.stop(START + 10) is False


def test_mounted_programs_and_device_environment():
    output, code, _ = run("nvidia-smi -L; nvidia-smi; /usr/bin/nvidia-smi -q; echo $NVIDIA_VISIBLE_DEVICES",
                          "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                          env=(("NVIDIA_VISIBLE_DEVICES", "GPU-1"),),
                          mounted={"/usr/bin/nvidia-smi": {"-L": "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n",
                                                           "": "+-----+\n| NVIDIA-SMI |\n"}})
    assert (output, code) == ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n+-----+\n| NVIDIA-SMI |\n"
                              "+-----+\n| NVIDIA-SMI |\nGPU-1\n", 0)


def test_the_cuda_entrypoint_banner_warns_without_a_driver():
    output, code, _ = run(["/opt/nvidia/nvidia_entrypoint.sh", "echo", "ran"], "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04")
    assert code == 0 and output.startswith("\n==========\n== CUDA ==\n==========\n\nCUDA Version 12.4.1\n")
    assert "WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.\n" in output
    assert output.endswith("ran\n")


TRITON_BANNER = ("\n=============================\n== Triton Inference Server ==\n=============================\n\n"
                 "NVIDIA Release 25.01 (build <unknown>)\nTriton Server Version 2.54.0\n\n"
                 "Copyright (c) 2018-2025, NVIDIA CORPORATION & AFFILIATES.  All rights reserved.\n\n"
                 "Various files include modifications (c) NVIDIA CORPORATION & AFFILIATES.  All rights reserved.\n\n"
                 "This container image and its contents are governed by the NVIDIA Deep Learning Container License.\n")


def test_the_triton_image_prints_its_own_banner_not_the_cuda_one():
    """triton-inference-server/server docker/entrypoint.d: its title, release, server version and copyright."""
    output, code, _ = run(["/opt/nvidia/nvidia_entrypoint.sh"], "nvcr.io/nvidia/tritonserver:25.01-py3")
    assert code == 0 and output.startswith(TRITON_BANNER) and "== CUDA ==" not in output
    assert "/NGC-DL-CONTAINER-LICENSE" not in output   # the CUDA images' line, not Triton's
    older, _, _ = run(["/opt/nvidia/nvidia_entrypoint.sh"], "nvcr.io/nvidia/tritonserver:22.07-py3")
    assert "NVIDIA Release 22.07 (build <unknown>)\nTriton Server Version 2.24.0\n" in older


def test_tritonserver_needs_a_model_repository_then_serves():
    output, code, _ = run(["/opt/nvidia/nvidia_entrypoint.sh", "tritonserver"], "nvcr.io/nvidia/tritonserver:25.01-py3")
    assert code == 1 and output.endswith(
        "error: creating server: Invalid argument - --model-repository must be specified\n")
    output, code, server = run(["/opt/nvidia/nvidia_entrypoint.sh", "tritonserver", "--model-repository=/models"],
                               "nvcr.io/nvidia/tritonserver:25.01-py3", until=5)
    assert code is None and server.running
    lines = output.splitlines()
    assert lines[-3:] == ['I0101 00:00:05.000000 1 grpc_server.cc:2558] "Started GRPCInferenceService at 0.0.0.0:8001"',
                          'I0101 00:00:05.000000 1 http_server.cc:4725] "Started HTTPService at 0.0.0.0:8000"',
                          'I0101 00:00:05.000000 1 http_server.cc:358] "Started Metrics Service at 0.0.0.0:8002"']
    assert "CUDA memory pool disabled" in output    # no /dev/nvidiactl: no GPU in this container
    assert server.stop(START + 10) is True and server.exit_code == 0
