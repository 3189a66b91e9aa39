#!/usr/bin/env bash
# The trainer's GPU check (README.md, "GPU check"): on one GPU with no network and the
# machine's own torch/transformers (FROGNANO_TRAINER_PYTHON, default python3; peft and
# safetensors must be importable), in under 8 minutes:
#   - the tiny Qwen3.5 end to end over the protocol: one process, then torchrun with
#     --distributed ddp and fsdp over every GPU;
#   - GRPO train requests on a random-initialised FrogNano-sized model (Qwen3.5-4B's text
#     config) in bf16 with gradient checkpointing at 8k-token sequences: step time, tokens/s,
#     peak memory, model FLOPs utilisation against --peak-tflops (790 for an H200), and a
#     forward breakdown by layer kind.
# The report goes to report.md and report.json in the output folder (default
# ./gpu-check-report, or $OUT/gpu-check when OUT is set).
#
#   finetune/trainer/gpu-check.sh              # the real check (GPU)
#   finetune/trainer/gpu-check.sh --mini       # tiny model, few tokens, CPU: proves the script
#   finetune/trainer/gpu-check.sh --out DIR [bench options: python -m frognano_trainer.bench -h]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
py=${FROGNANO_TRAINER_PYTHON:-python3}
out=${OUT:+$OUT/gpu-check}
out=${out:-gpu-check-report}
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
# nothing may be fetched: a random model, no hub kernels, no downloads
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1
mkdir -p "$out"
# the hard stop under the 8 minutes; the bench itself plans to finish within --deadline-s
timeout -k 10 460 "$py" -m frognano_trainer.bench --out "$out" "$@"
