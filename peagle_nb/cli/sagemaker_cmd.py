"""``peagle-nb sagemaker``: plan, deploy, invoke, run locally, and clean up SageMaker AI endpoints.

    peagle-nb sagemaker plan --preset gpt-oss-20b-peagle --region us-west-2 --role arn:aws:iam::...:role/X
    peagle-nb sagemaker local --preset tiny-peagle --prompt "def fib(n):"     # real vLLM on this machine
    peagle-nb sagemaker deploy --preset tiny-peagle --s3-bucket B ...         # deletes afterwards unless --keep
    peagle-nb sagemaker invoke --endpoint NAME --prompt "..." [--stream]
    peagle-nb sagemaker cleanup --tag peagle-nb:run=12021130ab12 [--s3-bucket B] [--dry-run]  # leftovers

Every argument is checked before anything starts or any AWS call is made, the request too (``--max-tokens``
against the preset's maximum model length, an empty or oversize prompt, K against the head's trained K, the
instance type): a bad one ends in one paragraph naming the problem and the fix, with exit code 2. A request
the live endpoint refuses (SageMaker's ``ModelError``) ends in one paragraph and exit code 1. ``deploy`` then
reads the speculation verdict from the endpoint's log: exit 0 when speculation is active, 1 when inactive, 3
when the log cannot be read (the paragraph names the missing permission). The notebook 06 explains each step;
this is the same code without Jupyter.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap

S3_BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def _plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="gpt-oss-20b-peagle",
                   help="a preset of peagle_nb.serving.presets (the same table as `peagle-nb serve`)")
    p.add_argument("--target", help="hub id, local folder or s3:// uri (overrides the preset)")
    p.add_argument("--head", help="draft head: hub id, local folder or s3:// uri")
    p.add_argument("--k", type=int, help="speculative tokens per step")
    p.add_argument("--instance-type")
    p.add_argument("--region")
    p.add_argument("--role", dest="role_arn", help="SageMaker execution role ARN (or SAGEMAKER_ROLE_ARN)")
    p.add_argument("--image-uri", help="explicit container image (default: see peagle_nb/sagemaker/images.py)")
    p.add_argument("--s3-bucket", help="where local target/head folders are uploaded")


def _build(args):
    from peagle_nb.sagemaker.plan import build_plan

    return build_plan(args.preset, target=args.target, head=args.head, k=args.k, instance_type=args.instance_type,
                      region=args.region, role_arn=args.role_arn, image_uri=args.image_uri, s3_bucket=args.s3_bucket)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    q = sub.add_parser("plan", help="build, validate and print a deployment plan (no AWS call)")
    _plan_args(q)
    q.add_argument("--json", action="store_true", help="print the plan as JSON")
    q.add_argument("--local", action="store_true", help="validate for the local emulation (no role/region)")
    q = sub.add_parser("local", help="serve the plan with real vLLM on this machine, ping, invoke, stop")
    _plan_args(q)
    q.add_argument("--prompt", default="The quick brown fox")
    q.add_argument("--max-tokens", type=int, default=32)
    q = sub.add_parser("deploy", help="deploy to SageMaker AI, wait, invoke once, delete (unless --keep)")
    _plan_args(q)
    q.add_argument("--prompt", default="The quick brown fox")
    q.add_argument("--max-tokens", type=int, default=32)
    q.add_argument("--keep", action="store_true", help="leave the endpoint running (it bills by the hour)")
    q.add_argument("--timeout", type=float, default=None, help="seconds to wait for InService")
    q.add_argument("--speculation-wait", type=float, default=120,
                   help="seconds to wait for vLLM's spec-decode line in the endpoint's CloudWatch log after the "
                        "request (0: read once); no drafts = exit code 1")
    q = sub.add_parser("invoke", help="send one completion request to an endpoint")
    q.add_argument("--endpoint", required=True)
    q.add_argument("--region")
    q.add_argument("--prompt", required=True)
    q.add_argument("--max-tokens", type=int, default=32)
    q.add_argument("--stream", action="store_true")
    q = sub.add_parser("cleanup", help="delete endpoints, configs, models and S3 objects tagged by this suite")
    q.add_argument("--tag", default="peagle-nb:suite=peagle-notebooks",
                   help="KEY=VALUE (default: everything the suite created; peagle-nb:run=<id> for one run)")
    q.add_argument("--region")
    q.add_argument("--s3-bucket", help="also look for tagged uploads under s3://BUCKET/peagle-nb/")
    q.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    q.add_argument("--any-name", action="store_true", help="look beyond resources named peagle-*")


def argument_problems(args) -> list[str]:
    """Everything wrong with the command line, each with its fix; checked before anything starts."""
    from peagle_nb.sagemaker.plan import NAME_RE, REGION_RE, ROLE_RE
    from peagle_nb.serving.presets import PRESETS

    problems = []
    if getattr(args, "preset", None) is not None and args.preset not in PRESETS:
        problems.append(f"unknown preset {args.preset!r}; choose one of: {', '.join(PRESETS)}")
    if getattr(args, "k", None) is not None and args.k < 1:
        problems.append(f"--k {args.k}: the number of speculative tokens must be >= 1")
    if getattr(args, "region", None) is not None and not REGION_RE.match(args.region):
        problems.append(f"--region {args.region!r} does not look like an AWS region: pass one such as us-west-2")
    if getattr(args, "role_arn", None) is not None and not ROLE_RE.match(args.role_arn):
        problems.append(f"--role {args.role_arn!r} is not an IAM role ARN: pass "
                        "arn:aws:iam::<12-digit account>:role/<SageMaker execution role>")
    if getattr(args, "s3_bucket", None) is not None and not S3_BUCKET_RE.match(args.s3_bucket):
        problems.append(f"--s3-bucket {args.s3_bucket!r} is not an S3 bucket name: pass the bare name "
                        "(lower case, digits, '.', '-'; no s3:// prefix)")
    if hasattr(args, "prompt"):
        from peagle_nb.sagemaker.request_checks import request_problems

        problems += request_problems(args.prompt or "", getattr(args, "max_tokens", None), option="--")
    if getattr(args, "endpoint", None) is not None and not NAME_RE.match(args.endpoint):
        problems.append(f"--endpoint {args.endpoint!r} is not a SageMaker endpoint name (letters, digits and "
                        "hyphens, up to 63): pass the name `peagle-nb sagemaker deploy --keep` printed")
    if args.action == "cleanup":
        key, sep, value = args.tag.partition("=")
        if not (sep and key and value):
            problems.append(f"--tag must be KEY=VALUE, got {args.tag!r}: e.g. --tag peagle-nb:run=<run id>")
    return problems


def _paragraph(text: str) -> str:
    return textwrap.fill(text, width=110, break_long_words=False, break_on_hyphens=False)


def _fail(action: str, problems: list[str]) -> int:
    text = f"peagle-nb sagemaker {action}: " + " ".join(p if p.endswith(".") else p + "." for p in problems)
    print(_paragraph(text), file=sys.stderr)
    return 2


def run(args) -> int:
    from peagle_nb.sagemaker._deps import MissingDependency
    from peagle_nb.sagemaker.plan import PlanError, validate_plan

    problems = argument_problems(args)
    if problems:
        return _fail(args.action, problems)
    try:
        if args.action == "plan":
            plan = _build(args)
            try:
                validate_plan(plan, for_aws=not args.local)
            except PlanError as exc:
                problems = exc.problems
            print(plan.to_json() if args.json else plan.describe())
            return _fail("plan", problems) if problems else 0
        if args.action == "local":
            return _local(args)
        if args.action == "deploy":
            return _deploy(args)
        if args.action == "invoke":
            return _invoke(args)
        if args.action == "cleanup":
            from peagle_nb.sagemaker.deploy import boto_session, cleanup_tagged

            key, _, value = args.tag.partition("=")
            found = cleanup_tagged(boto_session(args.region), (key, value), dry_run=args.dry_run,
                                   name_contains=None if args.any_name else "peagle", s3_bucket=args.s3_bucket)
            print(f"{'found' if args.dry_run else 'deleted'}: " + json.dumps(found))
            return 0
    except PlanError as exc:
        return _fail(args.action, exc.problems)
    except (MissingDependency, FileNotFoundError) as exc:
        return _fail(args.action, [str(exc)])
    return 1


def _checked_plan(args):
    """The plan of ``args``, with the request checked against it (PlanError before anything starts)."""
    from peagle_nb.sagemaker.plan import PlanError
    from peagle_nb.sagemaker.request_checks import request_problems

    plan = _build(args)
    problems = request_problems(args.prompt, args.max_tokens, plan, option="--")
    if problems:
        raise PlanError(problems)
    return plan


def _refused(action: str, exc: BaseException) -> int:
    print(_paragraph(f"peagle-nb sagemaker {action}: {exc}"), file=sys.stderr)
    return 1


def _local(args) -> int:
    from peagle_nb.models.checkpoint import HeadCheckpointError
    from peagle_nb.sagemaker.local import LocalEndpoint, ModelError

    try:
        endpoint = LocalEndpoint(_checked_plan(args))  # validates the plan and the head before vLLM starts
    except HeadCheckpointError as exc:
        return _fail("local", [str(exc)])
    with endpoint.start() as ep:
        print("GET /ping ->", ep.ping())
        try:
            out = ep.invoke({"prompt": args.prompt, "max_tokens": args.max_tokens, "temperature": 0.0})
        except ModelError as exc:
            return _refused("local", f"the local endpoint refused the request: {exc}")
        print(json.dumps(out, indent=1))
    return 0


def _deploy(args) -> int:
    import time

    from peagle_nb.sagemaker.deploy import Deployment, EndpointRefused
    from peagle_nb.sagemaker.observe import SpeculationOff, SpeculationUnverified, log_group, require_speculation

    dep = Deployment(_checked_plan(args)).create(timeout_s=args.timeout)
    try:
        started = time.time()
        print(json.dumps(dep.invoke({"prompt": args.prompt, "max_tokens": args.max_tokens}), indent=1))
        if dep.plan.method != "none":  # an endpoint answers just as well with speculation silently off
            stats = dep.speculation(since_s=started - 60, wait_s=args.speculation_wait)
            print(f"speculation {stats['verdict']}: {stats['verdict_reason']}")
            if stats.get("k_mismatch"):
                print(f"note: {stats['k_mismatch']}")
            require_speculation(stats, f"CloudWatch {log_group(dep.plan.resource_name)}")
    except EndpointRefused as exc:
        return _refused("deploy", exc)
    except SpeculationOff as exc:
        return _refused("deploy", exc)
    except SpeculationUnverified as exc:
        _refused("deploy", exc)
        return 3
    finally:
        if args.keep:
            print(f"endpoint {dep.plan.resource_name} KEPT (billing). Remove with: {dep._cleanup_command()}")
        else:
            dep.delete()
    return 0


def _invoke(args) -> int:
    from peagle_nb.sagemaker.backend import SageMakerBackend
    from peagle_nb.sagemaker.deploy import boto_session, refusal_message, runtime_client

    backend = SageMakerBackend(args.endpoint, runtime_client(boto_session(args.region), args.region),
                               ignore_eos=False)
    try:
        if args.stream:
            for piece in backend.stream_sync(args.prompt, args.max_tokens, 0.0):
                print(piece, end="", flush=True)
            print()
        else:
            print(json.dumps(backend.invoke(args.prompt, args.max_tokens), indent=1))
    except Exception as exc:
        message = refusal_message(exc, args.endpoint)
        if message is None:
            raise
        return _refused("invoke", message)
    return 0
