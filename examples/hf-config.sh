#!/usr/bin/env bash
# Any Hugging Face config.json works as --model (Llama-family or GPT-2 keys). The model is named
# after its folder. Here: Mistral-7B's shapes on 2 x DGX A100, with TP fixed to 2.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"${TOPOPLAN:-topoplan}" plan --cluster dgx-a100 --nodes 2 \
  --model "$here/models/Mistral-7B-v0.1/config.json" --tp 2 --top 3
