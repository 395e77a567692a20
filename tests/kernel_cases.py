"""Kernel-vs-reference cases run under Triton's interpreter in a child process (used by tests/test_kernels_*.py).

``TRITON_INTERPRET=1`` only takes effect if it is set before the first ``import triton`` in a process, and
setting it for the whole pytest session would change how other slices (vLLM on CPU) see Triton. So the
interpreted launches run here, in one child process per kernel module, and report differences as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MARK = "KERNEL-CASES-JSON:"


def run_interpreted(kernel: str, timeout_s: int = 120) -> dict:
    """Run ``cases_<kernel>()`` under the interpreter in a child process -> {case: result dict}."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    code = (f"import json; from tests import kernel_cases as c; "
            f"print({MARK!r} + json.dumps(c.cases_{kernel}()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout_s)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode != 0 or not lines:
        raise AssertionError(f"interpreted {kernel} cases failed (rc={proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(lines[-1][len(MARK):])


def _diff(outs, refs) -> int:
    """Number of differing entries over a tuple of outputs (shapes and dtypes must agree too)."""
    n = 0
    for o, r in zip(outs, refs):
        if o.shape != r.shape or o.dtype != r.dtype:
            return -1
        n += int((o.double() - r.double()).abs().gt(0).sum())
    return n


# --------------------------------------------------------------------------------------- greedy_verify
def cases_greedy_verify() -> dict:
    import torch

    from peagle_kernels.greedy_verify import greedy_verify, random_case, reference_greedy_verify

    out = {}

    def check(name, draft, target, nd=None, **launch):
        tri = greedy_verify(draft, target, nd, use_triton=True, **launch)
        ref = reference_greedy_verify(draft, target, nd)
        out[name] = {"diff": _diff(tri, ref), "accepted": tri[0].tolist()[:8], "rejected": tri[2].tolist()[:8]}

    check("batch_of_one", *random_case(1, 7, seed=1))
    d, t, _ = random_case(5, 4, seed=2)
    check("nothing_rejected", t[:, :4].clone(), t)
    check("everything_rejected", (t[:, :4] + 1) % 50, t)
    check("k1", *random_case(9, 1, seed=3))
    d, t, _ = random_case(6, 3, seed=4)
    check("empty_requests", d, t, torch.tensor([0, 3, 0, 1, 2, 0], dtype=torch.int32))
    check("ragged_random", *random_case(23, 7, seed=5))
    check("large_batch", *random_case(300, 10, seed=6))
    d, t, nd = random_case(17, 5, seed=7)
    check("int32_tokens", d.int(), t.int(), nd)
    check("tile_one", *random_case(5, 3, seed=8), tile=1)  # one request per program
    check("tile_8_partial_last_program", *random_case(21, 6, seed=9), tile=8)
    return out


# ---------------------------------------------------------------------------------------- draft_inputs
def vllm_kernel_sources():
    """vLLM's copy_and_expand_eagle_inputs_kernel and compute_new_slot_mapping, compiled from vLLM's own
    source file with real Triton (importing vLLM itself is slow and, on CPU, stubs Triton out). None if
    vLLM is not installed."""
    import ast
    import importlib.util

    import torch
    import triton
    import triton.language as tl

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "v1" / "spec_decode" / "utils.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wanted = {"copy_and_expand_eagle_inputs_kernel", "compute_new_slot_mapping"}
    nodes = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    for n in nodes:  # keep @triton.jit, drop vLLM-only decorators
        n.decorator_list = [d for d in n.decorator_list if ast.unparse(d) == "triton.jit"]
        n.returns = None
        for a in n.args.args:
            a.annotation = None
    ns = {"triton": triton, "tl": tl, "torch": torch, "PADDING_SLOT_ID": -1}
    exec(compile(ast.Module(body=nodes, type_ignores=[]), str(path), "exec"), ns)
    return ns["copy_and_expand_eagle_inputs_kernel"], ns["compute_new_slot_mapping"]


def run_vllm_draft_inputs(vllm, args, kw):
    """vLLM's kernel + slot mapping on our batch -> the fields they share with DraftInputs."""
    import torch
    import triton

    kernel, slot_fn = vllm
    tok, pos, bonus, qsl, nrej, bt = args
    K, B, N_in = kw["k"], bonus.shape[0], tok.shape[0]
    N_out = N_in + B * (K - 1)
    o = {"input_ids": torch.full((N_out,), -7, dtype=tok.dtype), "positions": torch.full((N_out,), -7),
         "is_rejected": torch.zeros(N_out, dtype=torch.bool), "is_masked": torch.zeros(N_out, dtype=torch.bool),
         "sample_indices": torch.full((B * K,), -7, dtype=torch.int32),
         "hidden_state_mapping": torch.full((N_in,), -7, dtype=torch.int32)}
    qend = qsl[1:] - 1 - nrej
    block = triton.next_power_of_2(int((qsl[1:] - qsl[:-1]).max()) + K - 1)
    kernel[(B, 1)](tok, pos, bonus, o["input_ids"], o["positions"], o["is_rejected"], o["is_masked"],
                   o["sample_indices"], o["hidden_state_mapping"], qsl, qend, kw.get("padding_token_id", 0),
                   kw["mask_token_id"], N_in, K, True, BLOCK_SIZE_TOKENS=block)

    class Cad:  # the three fields compute_new_slot_mapping reads
        block_table_tensor, query_start_loc = bt, qsl

        @staticmethod
        def naive_query_lens():
            return qsl[1:] - qsl[:-1]

    o["slot_mapping"] = slot_fn(Cad, o["positions"], o["is_rejected"], kw["block_size"], K - 1, kw["max_model_len"])
    return o


# name: (B, K, random_batch keywords); each case's seed is its place in this table
DRAFT_INPUTS_CASES = {
    "batch_of_one": (1, 7, {}),
    "nothing_rejected": (6, 5, dict(rejected="none")),
    "everything_rejected": (6, 5, dict(rejected="all")),
    "k1": (7, 1, dict(decode=False)),
    "max_model_len": (5, 7, dict(near_max_len=True, max_model_len=64, block_size=8)),
    "prefill_and_decode": (9, 4, dict(decode=False, max_prefill=20)),
    "empty_requests": (8, 3, dict(empty_every=3)),
    "all_empty": (3, 3, dict(empty_every=1)),
    "long_prefill_2d_grid": (2, 3, dict(decode=False, min_prefill=270, max_prefill=300)),
    "long_prefill_looping": (2, 3, dict(decode=False, min_prefill=40, max_prefill=60)),
    "large_batch": (96, 10, {}),
}


def draft_inputs_case(name: str):
    """(args, kw) of a DRAFT_INPUTS_CASES batch; kw carries seq_lens (pass seq_lens=None for the positions path)."""
    from peagle_kernels.draft_inputs import random_batch

    B, K, batch_kw = DRAFT_INPUTS_CASES[name]
    return random_batch(B, K, seed=list(DRAFT_INPUTS_CASES).index(name), with_seq_lens=True, **batch_kw)


def cases_draft_inputs() -> dict:
    """Per case: differing entries of the kernel vs the reference (positions path), for each first-position source
    (``target_positions`` or ``seq_lens``) and launch shape (``one_pass``: grid from max_query_len; ``loop``:
    each program loops over its rows). Keys ``"<positions|seq_lens>_<one_pass|loop>"``."""
    from peagle_kernels.draft_inputs import DraftInputs, build_draft_inputs, reference_draft_inputs

    vllm = vllm_kernel_sources()
    out = {}
    for name in DRAFT_INPUTS_CASES:
        args, kw = draft_inputs_case(name)
        positions_kw = {**kw, "seq_lens": None}
        ref = reference_draft_inputs(*args, **positions_kw)
        qlen_max = max(1, int((args[3][1:] - args[3][:-1]).max()))
        res = {f"{path}_{shape}": _diff(build_draft_inputs(*args, **path_kw, use_triton=True, max_query_len=mql), ref)
               for path, path_kw in (("positions", positions_kw), ("seq_lens", kw))
               for shape, mql in (("one_pass", qlen_max), ("loop", None))}
        res["other_tiles"] = max(_diff(build_draft_inputs(*args, **kw, use_triton=True, max_query_len=qlen_max,
                                                          tile=tile, elems_per_thread=ept), ref)
                                 for tile, ept in ((16, 1), (128, 1), (128, 4)))
        res.update(n_out=int(ref.input_ids.numel()), n_rejected=int(ref.is_rejected.sum()),
                   n_padding_slots=int((ref.slot_mapping == -1).sum()))
        if vllm is not None and "empty" not in name:  # vLLM has no empty requests
            theirs = run_vllm_draft_inputs(vllm, args, positions_kw)
            fields = [DraftInputs._fields.index(f) for f in theirs]
            res["vllm_diff"] = _diff([theirs[f] for f in theirs], [ref[i] for i in fields])
        out[name] = res
    return out


# --------------------------------------------------------------------------------------- hidden_expand
def cases_hidden_expand() -> dict:
    import torch

    from peagle_kernels.hidden_expand import (eager_expand_hidden, expand_hidden, random_case,
                                              reference_expand_hidden)

    out = {}

    def check(name, B, K, H, dtype=torch.float32, **kw):
        target, mask, src, hmap, masked = random_case(B, K, H, dtype=dtype, seed=len(out), **kw)
        ref = reference_expand_hidden(target, mask, src)
        tri = expand_hidden(target, mask, src, use_triton=True, block_r=4, block_h=64)
        eag = eager_expand_hidden(target, mask, hmap, masked)

        def diff(a: torch.Tensor) -> float:
            return float((a.float() - ref.float()).abs().max()) if ref.numel() else 0.0

        out[name] = {"diff": diff(tri), "eager_diff": diff(eag), "n_out": int(src.numel()),
                     "n_mask_rows": int((src == -1).sum()), "n_pad_rows": int((src == -2).sum())}

    check("batch_of_one", 1, 7, 48)
    check("nothing_rejected", 5, 4, 40, rejected="none")
    check("everything_rejected", 5, 4, 40, rejected="all")
    check("k1", 6, 1, 33, decode=False)
    check("empty_requests", 7, 3, 40, empty_every=3)
    check("ragged_prefill", 6, 5, 130, decode=False, max_prefill=9)  # H not a multiple of the block
    check("bfloat16", 5, 7, 64, dtype=torch.bfloat16)
    check("float16", 5, 3, 64, dtype=torch.float16)
    check("large_batch", 64, 10, 32)
    return out


# ---------------------------------------------------------------------------------------- decode_layer
def cases_decode_layer() -> dict:
    from peagle_kernels.decode_layer import check_correctness

    shapes = {
        "mha_one_row": dict(T=1, HQ=4, HKV=4, D=64, S=300, H=256),
        "gqa_rows_with_padding": dict(T=11, HQ=4, HKV=1, D=32, S=130, H=100),
        "gqa_two_groups": dict(T=5, HQ=4, HKV=2, D=16, S=64, H=48),
        "long_context": dict(T=3, HQ=2, HKV=2, D=16, S=700, H=64),
    }
    return {name: check_correctness(seed=i, **kw) for i, (name, kw) in enumerate(shapes.items())}


# -------------------------------------------------------------------------------------- sampled_verify
def _chi2_pvalue(counts, probs) -> float:
    """Chi-square goodness of fit of integer counts to probabilities (cells expected < 5 pooled)."""
    import torch

    n = counts.sum()
    exp = probs * n
    big = exp >= 5
    obs_c = torch.cat([counts[big], counts[~big].sum().reshape(1)]).double()
    exp_c = torch.cat([exp[big], exp[~big].sum().reshape(1)]).double()
    if exp_c[-1] == 0:
        obs_c, exp_c = obs_c[:-1], exp_c[:-1]
    exp_c = exp_c * obs_c.sum() / exp_c.sum()
    stat = float(((obs_c - exp_c) ** 2 / exp_c).sum())
    return float(torch.special.gammaincc(torch.tensor((len(obs_c) - 1) / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))


def cases_sampled_verify() -> dict:
    import torch

    from peagle_kernels.greedy_verify import greedy_verify
    from peagle_kernels.sampled_verify import random_case, reference_sampled_verify, sampled_verify

    out = {}

    def check(name, case, one_hot=False):
        tri = sampled_verify(*case, q_one_hot=one_hot, use_triton=True)
        ref = reference_sampled_verify(*case, q_one_hot=one_hot)
        out[name] = {"diff": _diff(tuple(t.long() for t in tri), tuple(r.long() for r in ref)),
                     "accepted": tri[0].tolist()[:12], "token": tri[1].tolist()[:12], "rejected": tri[2].tolist()[:12]}
        return tri

    for k in (0, 1, 3, 7, 10):
        check(f"k{k}_sampled_q", random_case(6, k, 3000, 1000, seed=k))
        check(f"k{k}_argmax_drafts", random_case(6, k, 3000, 1000, seed=k + 20), one_hot=True)
    case = list(random_case(8, 4, 3000, 1000, seed=30))
    case[4][::2] = 0.0  # greedy requests beside sampled ones
    check("mixed_greedy_and_sampled", case)
    # every draft accepted: the target puts (almost) all its mass on each draft
    case = list(random_case(5, 5, 3000, 1000, seed=31))
    case[0][:, :5].scatter_(-1, case[1][..., None], 60.0)
    check("every_draft_accepted", case)
    # every draft rejected: the target gives each draft no mass at all
    case = list(random_case(5, 5, 3000, 1000, seed=32))
    case[0][:, :5].scatter_(-1, case[1][..., None], float("-inf"))
    check("every_draft_rejected", case)
    # drafts outside the draft vocabulary: q(d) = 0, so a draft the target can produce is kept (min(1, p/0) = 1)
    case = list(random_case(5, 3, 3000, 1000, seed=33))
    outside = (case[3] < 0).nonzero().squeeze(1)
    case[1] = outside[torch.arange(15).reshape(5, 3) * 7]
    check("drafts_outside_draft_vocab", case)
    # T -> 0 is greedy verification
    case = list(random_case(7, 6, 3000, 1000, seed=34))
    case[4][:] = 1e6
    case[1][:, :3] = case[0][:, :3].argmax(-1)  # the first drafts agree with the target's argmax
    tri = check("t_to_zero", case)
    g_acc, g_tok, _ = greedy_verify(case[1], case[0].argmax(-1))
    out["t_to_zero"]["greedy_diff"] = int((tri[0] != g_acc).sum() + (tri[1] != g_tok).sum())
    # lossless in distribution: the output at position 0 follows p (fixed seed, chi-square over 1,500 draws). The
    # interpreter runs one program per row, a minute for all 1,500: the kernel redoes the first 300 rows, which must
    # equal the reference's bit for bit (every row is the same program on its own inputs and uniforms), and the
    # chi-square counts the reference's 1,500 outputs
    g = torch.Generator().manual_seed(5)
    v, k, n = 6, 2, 1500
    p = torch.softmax(torch.randn(k + 1, v, generator=g) * 2.0, -1)
    q = torch.softmax(torch.randn(k, v, generator=g) * 2.0, -1)
    drafts = torch.multinomial(q, n, replacement=True, generator=g).T.contiguous()
    args = (p.log().expand(n, k + 1, v).contiguous(), drafts, q.expand(n, k, v).contiguous(),
            torch.arange(v, dtype=torch.int32), torch.ones(n), torch.rand(n, k, generator=g),
            torch.rand(n, v, generator=g))
    ref = reference_sampled_verify(*args)
    m = 300
    acc, tok, _ = sampled_verify(*(a[:m].contiguous() if a.shape[0] == n else a for a in args), use_triton=True)
    first = torch.where(ref[0] > 0, drafts[:, 0], ref[1])
    out["chi_square_position_0"] = {"diff": _diff((acc.long(), tok), (ref[0][:m].long(), ref[1][:m])),
                                    "kernel_rows": m, "rows": n,
                                    "pvalue": _chi2_pvalue(torch.bincount(first, minlength=v), p[0])}
    return out


# ---------------------------------------------------------------------------------------- draft_sample
def cases_draft_sample() -> dict:
    import torch

    from peagle_kernels.draft_sample import draft_sample, random_case, reference_draft_sample

    out = {}

    def check(name, logits, inv_t, u, d2t, sample=True):
        tok, q = draft_sample(logits, inv_t, u, d2t, sample=sample, use_triton=True)
        rtok, rq = reference_draft_sample(logits, inv_t, u if sample else None, d2t)
        bad_q = 0 if q is None else int((~torch.isclose(q[inv_t > 0], rq[inv_t > 0], rtol=1e-5, atol=1e-9)).sum())
        out[name] = {"diff": int((tok != rtok).sum()), "q_diff": bad_q, "tokens": tok.tolist()[:8]}

    for rows, vd in ((1, 4096), (7, 1000), (10, 5000)):  # 5000: more than one block of the vocabulary
        check(f"rows{rows}_vocab{vd}", *random_case(rows, vd, 2 * vd, seed=rows))
    logits, inv_t, u, d2t = random_case(6, 1000, 3000, seed=3)
    inv_t[::2] = 0.0
    check("greedy_rows_mixed", logits, inv_t, u, d2t)
    check("rule_greedy_argmax_drafts", logits, inv_t, u, d2t, sample=False)
    logits, inv_t, u, d2t = random_case(4, 1000, 3000, seed=4, temperature=0.5)
    check("temperature_half", logits, inv_t, u, d2t)
    # lossless draw: 1,500 rows of one distribution, the drawn ids follow q (chi-square over the reference's draws;
    # the interpreted kernel redoes the first 300 rows bit for bit, as for sampled_verify above)
    g = torch.Generator().manual_seed(6)
    n, vd, m = 1500, 6, 300
    logits, inv_t, u = (torch.randn(vd, generator=g) * 1.5).expand(n, vd).contiguous(), torch.ones(n), \
        torch.rand(n, vd, generator=g)
    rtok, rq = reference_draft_sample(logits, inv_t, u, torch.arange(vd))
    tok, q = draft_sample(logits[:m], inv_t[:m], u[:m], torch.arange(vd), use_triton=True)
    out["chi_square"] = {"diff": int((tok != rtok[:m]).sum()), "kernel_rows": m, "rows": n,
                         "q_diff": int((~torch.isclose(q, rq[:m], rtol=1e-5, atol=1e-9)).sum()),
                         "pvalue": _chi2_pvalue(torch.bincount(rtok, minlength=vd), rq[0])}
    return out
