"""``peagle-nb sagemaker``: plan, deploy, invoke, run locally, and clean up SageMaker AI endpoints.

    peagle-nb sagemaker plan --preset gpt-oss-20b-peagle --region us-west-2 --role arn:aws:iam::...:role/X
    peagle-nb sagemaker local --preset tiny-peagle --prompt "def fib(n):"     # real vLLM on this machine
    peagle-nb sagemaker deploy --preset tiny-peagle --s3-bucket B ...         # deletes afterwards unless --keep
    peagle-nb sagemaker invoke --endpoint NAME --prompt "..." [--stream]
    peagle-nb sagemaker cleanup --tag peagle-nb:run=12021130ab12 [--dry-run]  # leftovers of a crashed run

The notebook 06 explains each step; this is the same code without Jupyter.
"""

from __future__ import annotations

import argparse
import json
import sys


def _plan_args(p: argparse.ArgumentParser) -> None:
    from peagle_nb.sagemaker.plan import PRESETS

    p.add_argument("--preset", choices=sorted(PRESETS), default="gpt-oss-20b-peagle")
    p.add_argument("--target", help="hub id, local folder or s3:// uri (overrides the preset)")
    p.add_argument("--head", help="draft head: hub id, local folder or s3:// uri")
    p.add_argument("--k", type=int, help="speculative tokens per step")
    p.add_argument("--instance-type")
    p.add_argument("--region")
    p.add_argument("--role", dest="role_arn", help="SageMaker execution role ARN (or SAGEMAKER_ROLE_ARN)")
    p.add_argument("--image-uri", help="explicit container image (default: the SDK's vLLM image for the region)")
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
    q = sub.add_parser("invoke", help="send one completion request to an endpoint")
    q.add_argument("--endpoint", required=True)
    q.add_argument("--region")
    q.add_argument("--prompt", required=True)
    q.add_argument("--max-tokens", type=int, default=32)
    q.add_argument("--stream", action="store_true")
    q = sub.add_parser("cleanup", help="delete endpoints, configs and models tagged by this suite")
    q.add_argument("--tag", default="peagle-nb:suite=peagle-notebooks",
                   help="KEY=VALUE (default: everything the suite created; peagle-nb:run=<id> for one run)")
    q.add_argument("--region")
    q.add_argument("--dry-run", action="store_true", help="list what would be deleted")
    q.add_argument("--any-name", action="store_true", help="look beyond resources named peagle-*")


def run(args) -> int:
    from peagle_nb.sagemaker.plan import PlanError, validate_plan

    try:
        if args.action == "plan":
            plan = _build(args)
            problems = []
            try:
                validate_plan(plan, for_aws=not args.local)
            except PlanError as exc:
                problems = exc.problems
            print(plan.to_json() if args.json else plan.describe())
            for problem in problems:
                print("PROBLEM:", problem, file=sys.stderr)
            return 2 if problems else 0
        if args.action == "local":
            from peagle_nb.sagemaker.local import LocalEndpoint

            with LocalEndpoint(_build(args)) as ep:
                print("GET /ping ->", ep.ping())
                out = ep.invoke({"prompt": args.prompt, "max_tokens": args.max_tokens, "temperature": 0.0})
                print(json.dumps(out, indent=1))
            return 0
        if args.action == "deploy":
            from peagle_nb.sagemaker.deploy import Deployment

            dep = Deployment(_build(args)).create(timeout_s=args.timeout)
            try:
                print(json.dumps(dep.invoke({"prompt": args.prompt, "max_tokens": args.max_tokens}), indent=1))
            finally:
                if args.keep:
                    print(f"endpoint {dep.plan.resource_name} KEPT (billing). Remove with: peagle-nb sagemaker "
                          f"cleanup --tag peagle-nb:run={dep.plan.run_id} --region {dep.plan.region}")
                else:
                    dep.delete()
            return 0
        if args.action == "invoke":
            from peagle_nb.sagemaker.backend import SageMakerBackend
            from peagle_nb.sagemaker.deploy import boto_session

            backend = SageMakerBackend(args.endpoint, boto_session(args.region).client("sagemaker-runtime"))
            if args.stream:
                for piece in backend.stream_sync(args.prompt, args.max_tokens, 0.0):
                    print(piece, end="", flush=True)
                print()
            else:
                print(json.dumps(backend.invoke(args.prompt, args.max_tokens), indent=1))
            return 0
        if args.action == "cleanup":
            from peagle_nb.sagemaker.deploy import boto_session, cleanup_tagged

            key, sep, value = args.tag.partition("=")
            if not sep or not key or not value:
                print(f"--tag must be KEY=VALUE, got {args.tag!r}", file=sys.stderr)
                return 2
            found = cleanup_tagged(boto_session(args.region), (key, value), dry_run=args.dry_run,
                                   name_contains=None if args.any_name else "peagle")
            print(f"{'found' if args.dry_run else 'deleted'}: " + json.dumps(found))
            return 0
    except PlanError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 1
