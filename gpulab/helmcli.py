"""The ``helm`` command of the learner's environment: the read-only release commands, answered by real Helm.

gpulab has no helm binary (nothing is downloaded at run time): ``gpulab install|upgrade|uninstall`` play
``helm install|upgrade|uninstall`` for the charts the course uses and store the release records real Helm
stores (Secrets ``sh.helm.release.v1.<name>.v<revision>`` of type ``helm.sh/release.v1``). This command
reads those records with Helm v4's own Go SDK (PyPI ``helm-python-sdk``, ``libhelm_c``), through the
kubeconfig and the API, so it answers the same on every engine and on any cluster real Helm installed into:

* ``helm list`` / ``ls`` (``-A``, ``-n``, ``-a``, ``-q``, ``--no-headers``, ``-f``, ``-o table|json|yaml``);
* ``helm status RELEASE`` (the table form);
* ``helm history RELEASE`` (``--max``, ``-o``);
* ``helm get values RELEASE`` (``--revision``, ``-o``).

Helm's action layer (storage driver, release decoding, state filters, sorting) is the real one; what this
module writes is only helm's printers (``pkg/cmd/list.go``, ``status.go``, ``history.go``,
``get_values.go``) and its ``Error: ...`` convention. Anything that would change the cluster or needs a chart
repository says what to run instead.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import datetime

import yaml

try:
    import helm_python
except ImportError:     # a learner install without the course extra: _config says what to install
    helm_python = None

# What plays helm's writing commands here, for the message that answers them.
_PLAYED_BY = {
    "install": "gpulab install gpu-operator",
    "upgrade": "gpulab upgrade gpu-operator",
    "uninstall": "gpulab uninstall gpu-operator",
    "delete": "gpulab uninstall gpu-operator",
}
# helm's other commands (pkg/cmd/root.go), which this environment does not provide.
_NOT_PROVIDED = frozenset({"completion", "create", "dependency", "env", "lint", "package", "plugin",
                           "pull", "push", "registry", "repo", "rollback", "search", "show", "template", "test",
                           "verify", "version"})


class HelmCommandError(Exception):
    """What follows ``Error: `` on helm's stderr."""


def go_time_string(iso: str) -> str:
    """Go's ``time.Time.String()`` of a UTC timestamp (``2016-01-16 00:00:01 +0000 UTC``), as ``helm list``'s
    UPDATED column shows it. The SDK reports whole seconds, so there is no fraction to print."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")


def _ansic(iso: str) -> str:
    """Go's ``time.ANSIC`` layout (``Mon Jan _2 15:04:05 2006``), as ``helm status`` prints LAST DEPLOYED."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).strftime("%a %b %e %H:%M:%S %Y")


def table(rows: list[list[str]]) -> str:
    """gosuri/uitable as helm uses it: every cell padded to its column's width, cells joined by a tab, and
    the newline ``output.EncodeTable`` adds."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("\t".join(cell.ljust(width) for cell, width in zip(row, widths)) for row in rows) + "\n"


def _go_yaml(value) -> str:
    """sigs.k8s.io/yaml's ``Marshal``: keys sorted, block style; nil is ``null``."""
    if value is None:
        return "null\n"
    if value == {}:
        return "{}\n"
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True)


def _go_json(value) -> str:
    """encoding/json's ``Encoder.Encode``: compact, one line."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n"


def _namespace(args: argparse.Namespace) -> str:
    """helm's namespace: ``-n``, else ``$HELM_NAMESPACE``, else the kubeconfig context's, else ``default``."""
    if args.namespace:
        return args.namespace
    if os.environ.get("HELM_NAMESPACE"):
        return os.environ["HELM_NAMESPACE"]
    from kubernetes import config

    try:
        contexts, active = config.list_kube_config_contexts(config_file=args.kubeconfig or None)
    except (config.ConfigException, OSError):   # no readable kubeconfig: helm falls back to "default" too
        return "default"
    if args.kube_context:
        active = next((c for c in contexts if c["name"] == args.kube_context), active)
    return (active or {}).get("context", {}).get("namespace") or "default"


def _config(args: argparse.Namespace):
    if helm_python is None:
        raise HelmCommandError("this helm needs Helm's SDK (the helm-python-sdk package): "
                               "run `pip install 'gpulab[course]'` (or `make install`)")
    kubeconfig = args.kubeconfig or None
    return helm_python.Config(kubeconfig_path=kubeconfig, kube_context=args.kube_context or None,
                              namespace=_namespace(args))


def _chart(rel: dict) -> str:
    return f"{rel['chart_name']}-{rel['chart_version']}"


def _list(args: argparse.Namespace) -> str:
    with _config(args) as cfg:
        releases = cfg.list(all_states=args.all, all_namespaces=args.all_namespaces,
                            name_filter=args.filter or None)
    if args.short:
        names = [r["name"] for r in releases]
        if args.output == "json":
            return _go_json(names)
        if args.output == "yaml":
            return _go_yaml(names)
        return "".join(f"{name}\n" for name in names)
    elements = [{"name": r["name"], "namespace": r["namespace"], "revision": str(r["revision"]),
                 "updated": go_time_string(r["deployed_at"]) if r.get("deployed_at") else "-",
                 "status": r["status"], "chart": _chart(r), "app_version": r.get("app_version") or ""}
                for r in releases]
    if args.output == "json":
        return _go_json(elements)
    if args.output == "yaml":
        return _go_yaml(elements)
    rows = [] if args.no_headers else [["NAME", "NAMESPACE", "REVISION", "UPDATED", "STATUS", "CHART",
                                        "APP VERSION"]]
    rows += [[e["name"], e["namespace"], e["revision"], e["updated"], e["status"], e["chart"], e["app_version"]]
             for e in elements]
    return table(rows) if rows else "\n"


def _status(args: argparse.Namespace) -> str:
    with _config(args) as cfg:
        everything = cfg.get_all(args.release)
    summary, info = everything["summary"], everything.get("info") or {}
    lines = [f"NAME: {summary['name']}"]
    if info.get("last_deployed"):
        lines.append(f"LAST DEPLOYED: {_ansic(info['last_deployed'])}")
    lines += [f"NAMESPACE: {summary['namespace']}", f"STATUS: {summary['status']}",
              f"REVISION: {summary['revision']}", f"DESCRIPTION: {info.get('description', '')}",
              "TEST SUITE: None"]
    return "\n".join(lines) + "\n"


def _history(args: argparse.Namespace) -> str:
    """helm's ``getHistory``: the newest ``--max`` revisions, printed oldest first."""
    with _config(args) as cfg:
        revisions = sorted(cfg.history(args.release), key=lambda r: r["revision"])[-args.max:]
        infos = {r["revision"]: cfg.get_all(args.release, revision=r["revision"]).get("info") or {}
                 for r in revisions}
    items = [{"revision": r["revision"], "updated": infos[r["revision"]].get("last_deployed"), "status": r["status"],
              "chart": _chart(r), "app_version": r.get("app_version") or "",
              "description": infos[r["revision"]].get("description", "")} for r in revisions]
    if args.output in ("json", "yaml"):
        return _go_json(items) if args.output == "json" else _go_yaml(items)
    rows = [["REVISION", "UPDATED", "STATUS", "CHART", "APP VERSION", "DESCRIPTION"]]
    rows += [[str(i["revision"]), _ansic(i["updated"]), i["status"], i["chart"], i["app_version"], i["description"]]
             for i in items]
    return table(rows)


def _get_values(args: argparse.Namespace) -> str:
    if args.all:
        raise HelmCommandError("get values --all is not available here: gpulab's release records keep the "
                               "user-supplied values, not the chart's defaults; see the chart's defaults with "
                               "`kubectl get clusterpolicy cluster-policy -o yaml`")
    with _config(args) as cfg:
        values = cfg.get_values(args.release, revision=args.revision or None)
    if args.output == "json":
        return _go_json(values)
    if args.output == "yaml":
        return _go_yaml(values)
    return "USER-SUPPLIED VALUES:\n" + _go_yaml(values)


def _global_flags(*, defaults: bool) -> argparse.ArgumentParser:
    """helm's global flags, accepted before and after the command; only the top level sets their defaults
    (a subcommand's default would overwrite a value given before the command)."""
    flags = argparse.ArgumentParser(add_help=False)

    def default(value):
        return value if defaults else argparse.SUPPRESS
    flags.add_argument("-n", "--namespace", default=default(""), help="namespace scope for this request")
    flags.add_argument("--kubeconfig", default=default(os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]),
                       help="path to the kubeconfig file")
    flags.add_argument("--kube-context", default=default(""), help="name of the kubeconfig context to use")
    return flags


def _parser() -> argparse.ArgumentParser:
    common = _global_flags(defaults=False)
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("-o", "--output", default="table", choices=("table", "json", "yaml"),
                        help="prints the output in the specified format")

    p = argparse.ArgumentParser(prog="helm", parents=[_global_flags(defaults=True)],
                                description="Helm's release commands (list, status, history, get values), read by "
                                            "Helm's own SDK; gpulab install|upgrade|uninstall play the others.")
    sub = p.add_subparsers(dest="command", metavar="list|status|history|get")
    ls = sub.add_parser("list", aliases=["ls"], parents=[common, output], help="list releases")
    ls.add_argument("-A", "--all-namespaces", action="store_true", help="list releases across all namespaces")
    ls.add_argument("-a", "--all", action="store_true", help="show all releases without any filter applied")
    ls.add_argument("-q", "--short", action="store_true", help="output short (quiet) listing format")
    ls.add_argument("--no-headers", action="store_true", help="don't print headers in the table")
    ls.add_argument("-f", "--filter", default="", help="a regular expression the release names must match")
    ls.set_defaults(run=_list)
    st = sub.add_parser("status", parents=[common], help="display the status of the named release")
    st.add_argument("release")
    st.set_defaults(run=_status)
    hist = sub.add_parser("history", aliases=["hist"], parents=[common, output], help="fetch release history")
    hist.add_argument("release")
    hist.add_argument("--max", type=int, default=256, help="maximum number of revision to include in history")
    hist.set_defaults(run=_history)
    get = sub.add_parser("get", help="download extended information of a named release")
    what = get.add_subparsers(dest="what", metavar="values", required=True)
    values = what.add_parser("values", parents=[common, output], help="download the values of a named release")
    values.add_argument("release")
    values.add_argument("--revision", type=int, default=0, help="get the named release with revision")
    values.add_argument("-a", "--all", action="store_true", help="dump all (computed) values")
    values.set_defaults(run=_get_values)
    return p


def _refusal(argv: list[str]) -> str | None:
    """The message for a helm command this environment does not run, or None for one it does."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in _PLAYED_BY:
        return (f"helm {command} is played here by `{_PLAYED_BY[command]}` (the chart is built in, nothing is "
                f"downloaded): run `{_PLAYED_BY[command]} --help`")
    if command in _NOT_PROVIDED:
        return (f"helm {command} is not available here: this helm answers list, status, history and get values "
                f"from the cluster's release records; gpulab install|upgrade|uninstall play the chart commands")
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    refusal = _refusal(argv)
    if refusal:
        print(f"Error: {refusal}", file=sys.stderr)
        return 1
    args = _parser().parse_args(argv)
    if not getattr(args, "run", None):
        _parser().print_help()
        return 0
    try:
        sys.stdout.write(args.run(args))
    except (HelmCommandError, *_sdk_errors()) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


def _sdk_errors() -> tuple[type[Exception], ...]:
    """Helm's own errors (``release: not found``, an unreachable cluster), which helm prints after ``Error: ``."""
    return () if helm_python is None else (helm_python.HelmError,)


if __name__ == "__main__":
    sys.exit(main())
