"""The dockyard-k8s command line (also installed as `generator`).

Exit codes: 0 success, 1 a check failed or the cluster said no, 2 bad input or usage.
Heavy modules are imported inside the commands so that start-up stays fast.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Callable, Sequence

from generator import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

OUTPUT_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)  # a write that failed (e.g. stdout on a full disk)


def _inputs_args(p: argparse.ArgumentParser, output: bool = True) -> None:
    p.add_argument("recipe", help="the recipe YAML (what to train); - reads it from stdin")
    p.add_argument("infra", help="the infra spec YAML (where to run it)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="recipe overrides: a.b.c=VALUE, a.b[N]=VALUE for item N of a list; VALUE is YAML "
                        "(the grammar: docs/cli.md, Overrides and inputs)")
    if output:
        p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (replaced atomically) instead of stdout")


def cmd_values(args: argparse.Namespace) -> int:
    from generator.inputs.compose import composed, values_yaml
    from generator.render.atomic_file import refuse_inputs, write

    refuse_inputs(args.output, (args.recipe, args.infra))
    write(values_yaml(composed(args.recipe, args.infra, args.overrides).values), args.output)
    return EXIT_OK


def cmd_render(args: argparse.Namespace) -> int:
    from generator.inputs.reading import release_guess
    from generator.render import helm
    from generator.render.atomic_file import refuse_inputs, write

    refuse_inputs(args.output, (args.recipe, args.infra))
    early = helm.started(*(release_guess(args.recipe, args.infra, args.overrides) or (None, None)))
    try:
        from generator.inputs.compose import composed  # YAML and the schema check: while helm starts

        c = composed(args.recipe, args.infra, args.overrides)
    except BaseException:
        if early is not None:
            early.cancel()
        raise
    write(helm.render(early, c.values, c.release, c.namespace), args.output)
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """The offline check (generator.render.check), and with --server the live dry run
    (generator.live.probes.server_check), whose cluster failures are one line like the live verbs'."""
    from generator.pinned_tools import targeting

    with targeting(*_target_versions(args)):
        if args.server:
            from generator.live.client.api_errors import cluster_errors

            return cluster_errors(_check)(args)
        return _check(args)


def _target_versions(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """`--kuberay-version` and `--kube-version` resolved to their pins; a version outside the range is exit 2."""
    from generator.errors import InputError, Problem
    from generator.pinned_tools import VersionUnsupported, kube_minor_pin, kube_range, kuberay_pin, kuberay_range

    out: list[str | None] = []
    for flag, given, resolve, supported in (
            ("--kuberay-version", args.kuberay_version, kuberay_pin, f"KubeRay {kuberay_range()}"),
            ("--kube-version", args.kube_version, kube_minor_pin, f"Kubernetes {kube_range()}")):
        try:
            out.append(resolve(given) if given else None)
        except VersionUnsupported as exc:
            raise InputError([Problem("<command line>", None, "", f"{flag} {given}: {exc}",
                                      expected=f"a minor of {supported}")]) from None
    return out[0], out[1]


def _check(args: argparse.Namespace) -> int:
    from generator.render.kubeconform import Run

    validator = Run()  # starts now, so kubeconform's start-up overlaps the imports below
    try:
        from generator.render.check import checked, report

        server = None
        if args.server:  # a bad kubeconfig is told before anything renders
            from generator.live.client.kube import Kube

            server = Kube(args.kubeconfig, args.context)
    except BaseException:
        validator.cancel()
        raise
    found = checked(args.recipe, args.infra, args.overrides, validator=validator)
    if server is not None:
        from generator.live.probes.server_check import add_dry_run

        add_dry_run(found, server)
    return report(found, security=args.security)


# --version's pinned tools: label -> the table of tools' pin
VERSION_PINS = {"Helm": "HELM_VERSION", "kubeconform": "KUBECONFORM_VERSION", "KubeRay": "KUBERAY_VERSION",
                "Kubernetes": "KUBERNETES_VERSION", "Kueue": "KUEUE_VERSION", "agent-sandbox": "AGENT_SANDBOX_VERSION",
                "Ray": "RAY_VERSION"}


def version_text() -> str:
    """The installed package's version (its metadata), the chart's (with where it is read from) and the pins of the
    tools it drives, with the KubeRay and Kubernetes versions `check` supports."""
    from importlib.metadata import PackageNotFoundError, version

    from generator.bundled import chart_dir, chart_version
    from generator.pinned_tools import kube_range, kuberay_range, versions

    try:
        package = version("dockyard-k8s")
    except PackageNotFoundError:
        package = "(not installed)"
    pins = versions()
    tools = ", ".join(f"{label} {pins[pin]}" for label, pin in VERSION_PINS.items())
    return (f"dockyard-k8s {package}\nchart dockyard {chart_version()} ({chart_dir()})\npinned tools: {tools}\n"
            f"supported: KubeRay {kuberay_range()}, Kubernetes {kube_range()}")


OWN_VERBS = ("values", "render", "check")  # need none of the subcommand groups in other packages


def build_parser(extensions: bool = True, verb: str | None = None) -> argparse.ArgumentParser:
    """The CLI's parser; with `verb` one of an extension's verbs, that extension's subcommands alone (the others'
    imports and parsers cost a verb run often, `status`, what it never uses)."""
    import argparse  # here: `render` and `check` start helm before paying for it (`_prestart_helm`)

    parser = argparse.ArgumentParser(
        prog="dockyard-k8s",
        description="Recipe + infra spec -> one GPU KubeRay cluster (trainer + inference) and a sandbox executor pool.",
    )
    class Version(argparse.Action):  # the text is read when asked: the chart, the table of tools, the metadata
        def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
            print(version_text())
            parser.exit()

    parser.add_argument("--version", action=Version, nargs=0,
                        help="the package's version, the chart's and the pinned tools', then exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if verb is not None and extensions and any(verb in verbs for verbs in EXTENSIONS.values()):
        for _verbs, register in _extensions(verb):
            register(sub, verb)  # that verb's parser alone
        return parser

    p = sub.add_parser("values", help="print the chart values composed from recipe + infra (no cluster contact)")
    _inputs_args(p)
    p.set_defaults(func=cmd_values)

    p = sub.add_parser("render", help="render every manifest, in apply order (no cluster contact)")
    _inputs_args(p)
    p.set_defaults(func=cmd_render)

    p = sub.add_parser("check",
                       help="validate: models, schema, helm template, kubeconform -strict (no cluster contact)")
    _inputs_args(p, output=False)
    p.add_argument("--security", action="store_true",
                   help="also print each hardening control per rendered pod template")
    p.add_argument("--server", action="store_true", help="also send every object to the apiserver with dryRun=All")
    p.add_argument("--kubeconfig",
                   help="with --server: the kubeconfig (default $KUBECONFIG, ~/.kube/config, the playground's)")
    p.add_argument("--context", help="with --server: the kubeconfig context")
    from generator.pinned_tools import KUBE_MINORS, KUBERAY_PINS, kuberay_version  # the versions: the table of tools

    p.add_argument("--kuberay-version", metavar="X",
                   help=f"validate against that KubeRay minor's CRDs ({', '.join(KUBERAY_PINS)}; default: the pinned "
                        f"{kuberay_version()})")
    p.add_argument("--kube-version", metavar="1.X",
                   help=f"target that Kubernetes minor (1.{KUBE_MINORS[0]}-1.{KUBE_MINORS[-1]}): kubeconform's schemas "
                        "and Helm's capabilities; the apiserver validation is the nearest pinned minor")
    p.set_defaults(func=cmd_check)

    for _verbs, register in _extensions() if extensions else ():
        register(sub)
    return parser


# Subcommand groups that live in their own packages, each with the top-level verbs its add_parser registers
# (tests/unit/live/test_cli.py holds the two together): a verb imports its own group only.
EXTENSIONS = {
    "generator.live.cli": ("run", "smoke", "cluster", "status", "logs", "history", "rollback", "uninstall", "job",
                           "dev", "doctor"),
    "generator.playground.cli": ("playground",),
}


def _extensions(verb: str | None = None) -> list[tuple[tuple[str, ...], Callable[..., None]]]:
    """(verbs, add_parser(subparsers[, only])) of each group in EXTENSIONS, or of the one that has `verb`."""
    import importlib

    out = []
    for module, verbs in EXTENSIONS.items():
        if verb is not None and verb not in verbs:
            continue
        try:
            out.append((verbs, importlib.import_module(module).add_parser))
        except ModuleNotFoundError as exc:
            if exc.name not in (module, module.rsplit(".", 1)[0]):
                raise
    return out


def _prestart_helm(argv: list[str]) -> None:
    """`render R I [KEY=VALUE ...]` and `check R I [...]` without options (stdin aside): helm starts
    before argparse is imported and the parser built, ~10 ms sooner."""
    verb, *rest = argv
    if verb not in ("render", "check") or len(rest) < 2 or "-" in rest[:2] or any(a.startswith("-") for a in rest) \
            or not all("=" in a for a in rest[2:]):
        return
    from generator.inputs.reading import release_guess
    from generator.render import helm

    guess = release_guess(rest[0], rest[1], rest[2:])
    if guess:
        helm.prestart(*guess, tests=verb == "check")


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "generator.inputs.reading" in sys.modules:  # inputs are kept per command (a pipe is read once)
        sys.modules["generator.inputs.reading"].forget_inputs()
    if argv:
        _prestart_helm(argv)
    try:
        return _main(argv)
    finally:
        if "generator.render.helm" in sys.modules:
            sys.modules["generator.render.helm"].discard_prestarted()


def _main(argv: list[str]) -> int:
    # Importing the live and playground command groups costs ~10 ms that values/render/check never use.
    own = bool(argv and argv[0] in OWN_VERBS)
    parser = build_parser(extensions=not own, verb=argv[0] if argv and not own else None)
    args, extra = parser.parse_known_args(argv)
    # KEY=VALUE overrides may come after options too (`run R I -n ns k=v`).
    if extra and hasattr(args, "overrides") and all("=" in a and not a.startswith("-") for a in extra):
        args.overrides = [*args.overrides, *extra]
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    if getattr(args, "recipe", None) == "-" and getattr(args, "infra", None) == "-":
        print("error: only one input can be read from stdin (-)", file=sys.stderr)
        return EXIT_BAD_INPUT
    return dispatch(args)


def dispatch(args: argparse.Namespace) -> int:
    """Run a parsed command; the CLI's errors become one line on stderr and an exit code."""
    from generator.errors import CheckFailed, InputError, ToolMissing

    try:
        code = args.func(args)
        sys.stdout.flush()  # here, so a full disk under stdout is reported like any write error
        return code
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    except (CheckFailed, ToolMissing) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:
        if exc.errno not in OUTPUT_ERRNOS:
            raise
        from generator.render.atomic_file import silence_stdout

        silence_stdout()
        print(f"error: <stdout>: cannot write the output: {exc.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
