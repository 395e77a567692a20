#!/usr/bin/env bash
# Family v3 in one GPU lease: the target, then the rung-3 pair alone in lockstep, then the regime map
# (T in {1, 0.7, 0} x 64 / 256 tokens, three held-out sets). Explained in notebook 08 (section 7).
#
# The chain outlasts one call (600 s), so it runs as a background job that later calls poll:
#   calls 1-3: carry corpus v3 (`python -m peagle_nb.text.corpus_v3 --carry-plan --limit-mib 44`, the tiny
#              weights moved out of the tree for these calls: data/corpus/README.md);
#   call 3 also: setsid nohup peagle_nb/lab/training_runs/v3_lease.sh > /tmp/v3lease.out 2>&1 < /dev/null &
#                peagle_nb/lab/training_runs/v3_poll.sh 540 'target rc'
#   next calls:  peagle_nb/lab/training_runs/v3_poll.sh SECONDS 'heads rc' 'target/v3-target.tar.gz.part*'
#                peagle_nb/lab/training_runs/v3_poll.sh SECONDS done 'heads/v3-heads.tar.gz.part*'
# A poll must end before the session's device time does: give it SECONDS under budget_left_s minus a minute for
# the transfers (the machine goes back when the time is spent, and a call cut there returns nothing). The machine
# also goes back after 30 s idle: call again at once. Times measured on an H100 (family_v3/target_h100/,
# heads_h100_r3/, heads_h100_r3_rerun/): target 600 s, heads 420 s (381 s from a carried prompts file), the three
# sweeps 359 s (each capped by --budget-s: at 120 s the T=1 sweep's 256-token regime stopped at 2 sweeps of 3, so the
# recorded map re-ran it alone, and the cap is now 180 s; data/results/README.md, engine_h100_v3_lockstep.json.gz).
# The whole chain from nothing fits one session's device time (family_v3/heads_h100_s512e_rerun/lease_stages.txt):
# corpus in two carries (`corpus_v3 --carry-plan --limit-mib 50`, hard links under a git-ignored .carry/a, .carry/b
# copied into data/corpus/v3 by each call: a carry names 8 paths at most), then SEQ_LEN=512 N_SEQUENCES=45056
# HEADS_BUDGET_S=330 HEADS_DEADLINE_S=760 LENGTHS=512 KS=3,5,7 TEMPS="0.7 0" TARGET_FLAGS="--time-budget-s 420
# --deadline-s 840": target 523 s, heads 617 s (their prompts drawn here: no PROMPTS file), sweeps 152 + 107 s;
# 1,436 s of device time with the start and four polls.
#
# A target already trained (data/models/v3-target-h100, say) skips the target stage and the corpus: carry its files
# (the folder, 53 MB: one call's carry with the tiny weights moved out of the tree, the corpus kept) and, in the next
# call, the heads' prompts file (`python -m peagle_nb.lab.training_runs.family_v3 prompts --target DIR --n-sequences
# 90112 --out FILE`, on a CPU, ~30 s; a prefix serves fewer sequences), then run with TARGET_DIR=DIR PROMPTS=FILE
# (absolute paths: copy both under /tmp first, a later call's tree replaces the checkout): heads and sweeps in about
# 12 minutes (measured: 381 + 359 s).
# TARGET_FLAGS: the target's run; the default pins the recorded target's step count (its card's command for a GPU
# of another throughput). The recorded H100 re-training used TARGET_FLAGS="--time-budget-s 420 --deadline-s 840".
# Heads already trained (data/models/v3-heads-h100: the pair the complete map measured) skip the heads stage too:
# HEADS_DIR=DIR (holding v3-eagle3-r3/ and v3-peagle-r3/). WINDOW=W sweeps with both drafters attending to the W
# positions ending at each row's own only (`engine_sweep --drafter-window W`; notebook 08: why P-EAGLE drafts worse
# past its training length), over 512 tokens unless LENGTHS says otherwise; its records are engine_t*_w$W.json.
# SEQ_LEN=L trains the heads on L-position sequences (default 256, the length past which they draft worse:
# notebook 08); give N_SEQUENCES=90112*256/L for the same positions. The generator's batch shrinks to keep the KV cache
# of 4096 x 256 positions (GEN_BATCH overrides it: an H100 ran out of memory generating 4096 sequences of 512). At
# L=512 the data takes ~250 s (~150 s at 256), so the heads' deadline grows by 100 s per 256 positions (HEADS_DEADLINE_S
# overrides it): at the old 560 s it left each head 191 s, 542 steps (heads_h100_s512/; the 256-position pair: its
# 900-step cap in 160 s). HEADS_BUDGET_S (default 300) is each head's training time: at L=512 the pair runs 2.84
# steps/s, so the 900-step cap needs HEADS_BUDGET_S=330 HEADS_DEADLINE_S=720 (the data's 250 s, the training, 115 s
# reserved).
# Keep data/corpus/*.jsonl.gz in the carry (the heads' validation prompts come from it; move other files out):
# without it the heads command now stops before building data, where a lease once lost its trained heads.
# TEMPS (default "1 0.7 0"), SWEEP_BUDGET_S (180) and KS (default 1,3,5,7; K=1 was never a best K on the H100, so
# KS=3,5,7 buys a sweep more within the budget) fit the sweeps into what is left of a lease.
# LIMIT (default 4) is the sweeps' prompts per set: at T > 0 each sweep samples its own text, and over 4 prompts x 512
# tokens the text moved Japanese EAGLE-3's tau by more than a token between sweeps (engine_h100_v3_s512e_rerun.json.gz,
# notebook 08), so sampled points want more prompts; the time per sweep grows with it. Measured with LIMIT=8, KS=3,5,7
# (engine_h100_v3_s512e_p8.json.gz): T=1 281 s (the 260-s SWEEP_BUDGET_S stopped its third sweep; 3 sweeps took
# 336 s with SWEEP_BUDGET_S=450), T=0.7 261 s; greedy with KS=7 alone 124 s. Every prompt is sampled with a fixed
# seed (1000 x sweep + its index), so its runs repeat across leases step for step.
# RUNG (default 3) is the pair's rung of the budget ladder: RUNG x 300 steps for each head, in lockstep.
# PAIR_TEACHER=shared trains the pair in one process that runs the teacher once per step for both heads (`peagle-nb
# train pair`; default separate: two lockstep processes, as every pair up to rung 10), and TEACHER_TF32=1 runs the
# teacher's products in TF32 (the teacher is half of each head's step: family_v3/head_train_step_h100.json). The
# rung-20 pair ran that way on an H100 (family_v3/heads_h100_r20/, engine_h100_v3_r20.json.gz; the lease held the
# machine 1,625 s in six calls, head_train_step_h100.json's run among them): TARGET_DIR=/tmp/models/v3-target-h100b PROMPTS=/tmp/prompts_v3.pt.gz RUNG=20
# PAIR_TEACHER=shared TEACHER_TF32=1 HEADS_BUDGET_S=900 HEADS_DEADLINE_S=1300 TEMPS=0 LENGTHS=256 KS=3,5,7 LIMIT=8
# SWEEP_BUDGET_S=240: data 160 s, 6,000 steps in 611 s (9.8 pair steps/s, 1.75x the lockstep pairs' 5.6), both
# evaluations, greedy sweep 99 s; T=0.7, T=1 and greedy-over-512 sweeps followed in later calls of the same lease
# (engine_sweep by hand: data/results/README.md). At that rate rung 30 trains ~920 s: RUNG=30 HEADS_BUDGET_S=1000
# HEADS_DEADLINE_S=1400 TEMPS=none fits a session (not yet run); TEMPS=none trains without sweeping, HEADS_DIR's
# sweeps in the next session.
# The carried target no longer fits one call beside the tree as a folder (53 MB + the tree without the tiny
# weights, 16 MB): carry it compressed (`tar -C data/models -cJf .carry/t/v3-target.tar.xz v3-target-h100b`, 37 MB;
# in the call `mkdir -p /tmp/models && tar -C /tmp/models -xJf .carry/t/v3-target.tar.xz`).
# PEAGLE_K (default 8) trains P-EAGLE to that many slots: the deep-K forecast of notebook 08 (compare.deep_k) says a
# deeper K would not turn the verdict on the rung-20 pair; checking it on v3 needs the pair swept past K=7 with a
# P-EAGLE trained that deep (slots past the trained depth accept nothing: deep_k/engine_h100_tiny_deep_k.json.gz). Run
# from nothing in one H100 lease (1,552 s held; deep_k/engine_h100_v3_deep_k.json.gz, the command in its .log):
# TARGET_FLAGS="--time-budget-s 420 --deadline-s 840" RUNG=3 PEAGLE_K=16 KS=3,5,7,10,12,16 TEMPS="0 0.7" LENGTHS=256
# LIMIT=8 SWEEP_BUDGET_S=240, corpus v3 in two carries of whole folders (a folder is one carry path: about 45 and 32 MiB,
# the tiny weights out of the tree): target 555 s, heads 438 s, sweeps 203 + 253 s.
# SMOKE=1 runs the same chain at smoke size on a CPU (tests/test_v3_lease.py; one target run, as on a GPU). R, W:
# results and work folders.
set -u
cd "$(dirname "$0")/../../.."
R=${R:-/tmp/v3run}; W=${W:-/tmp/v3work}
mkdir -p "$R" /tmp/pk && ln -sfn "$PWD/kernels" /tmp/pk/peagle_kernels
export PYTHONPATH=$PWD:/tmp/pk${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
PY=${PY:-python3}
stage() { echo "$(date +%s) $*" | tee -a "$R/stages.txt"; }
if [ -n "${SMOKE:-}" ]; then
  TFLAGS="--smoke --runs 20"; HFLAGS="--smoke --rungs 3 --base-steps 2 --ablations --gen-batch 8"; DEV=cpu
  SFLAGS="--limit 1 --ks 1,3 --sweeps 1 --repeats 1 --lengths ${LENGTHS:-8}"
else
  GB=${GEN_BATCH:-$((4096 * 256 / ${SEQ_LEN:-256}))}; HD=${HEADS_DEADLINE_S:-$((460 + 100 * ${SEQ_LEN:-256} / 256))}
  TFLAGS=${TARGET_FLAGS:-"--runs 2166 --time-budget-s 600 --deadline-s 1000"}
  HFLAGS="--n-sequences ${N_SEQUENCES:-90112} --generator lean --rungs ${RUNG:-3} --base-steps 300 --ablations
          --time-budget-s ${HEADS_BUDGET_S:-300} --sample-temperature 0.7 --deadline-s $HD --gen-batch $GB"
  LEN=${LENGTHS:-64,256}; [ -n "${WINDOW:-}" ] && LEN=${LENGTHS:-512}
  DEV=cuda; SFLAGS="--limit ${LIMIT:-4} --ks ${KS:-1,3,5,7} --sweeps 3 --repeats 1 --lengths $LEN"
  SFLAGS+=" --budget-s ${SWEEP_BUDGET_S:-180}"
fi
HFLAGS+=" --pair-teacher ${PAIR_TEACHER:-separate}${TEACHER_TF32:+ --teacher-tf32}${PEAGLE_K:+ --peagle-k $PEAGLE_K}"
stage start
if [ -n "${TARGET_DIR:-}" ]; then  # a target carried in (its weights, config, tokenizer and training_log.json)
  T=$TARGET_DIR; stage "target carried rc=0"
else
  # shellcheck disable=SC2086  # the flag lists split into words on purpose
  $PY -m peagle_nb.lab.training_runs.family target --family v3 $TFLAGS --out "$R/target" --work "$W" \
      > "$R/target.log" 2>&1
  stage "target rc=$?"
  kept=$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['selection']['kept'])" \
         "$R/target/family_target.json")
  T=$W/targets/$kept
  mkdir -p "$R/target_card" && cp "$T"/training_log.json "$T"/README.md "$T"/config.json "$R/target_card/"
fi
echo "$T" > "$R/target_dir.txt"
if [ -n "${HEADS_DIR:-}" ]; then  # a pair carried in
  H=$HEADS_DIR; stage "heads carried rc=0"
else
  # shellcheck disable=SC2086
  $PY -m peagle_nb.lab.training_runs.family heads --family v3 --target "$T" $HFLAGS ${PROMPTS:+--prompts "$PROMPTS"} \
      ${SEQ_LEN:+--seq-len "$SEQ_LEN"} --out "$R/heads" --work "$W" > "$R/heads.log" 2>&1
  stage "heads rc=$?"
  H=$W/heads/v3-heads
fi
for t in ${TEMPS:-1 0.7 0}; do
  [ "$t" = none ] && continue  # TEMPS=none: train only (a long rung), sweep later with HEADS_DIR
  # shellcheck disable=SC2086
  $PY -m peagle_nb.lab.sweeps.engine_sweep --device $DEV --target "$T" \
      --heads "$H/v3-eagle3-r${RUNG:-3}" "$H/v3-peagle-r${RUNG:-3}" \
      --prompts data/prompts/prose.jsonl data/prompts/code.jsonl data/prompts/ja.jsonl --temperatures $t $SFLAGS \
      ${WINDOW:+--drafter-window "$WINDOW"} --sections none --out "$R/engine_t$t${WINDOW:+_w$WINDOW}.json" \
      > "$R/engine_t$t${WINDOW:+_w$WINDOW}.log" 2>&1
  stage "sweep t=$t${WINDOW:+ window=$WINDOW} rc=$?"
done
stage done
