"""Retrain the induction models that lesson 06 loads, deterministically.

    python tools/train_induction.py            # train both, write src/mha/data/*.pt
    python tools/train_induction.py --check    # train both, compare with the shipped files

Two configurations, the same recipe (mha.induction_train.train): 2 attention-only
layers, d_model 32, rotary positions, 26 letters, blocks of 4..12 letters written
twice, Adam lr 1e-2, batch 64, 1500 steps, seed 0, one CPU thread. Each file holds
the config, the weights and a record: the recipe, the loss of every step, the
training time, the evaluation of mha.induction_train.evaluate (block length 10,
256 sequences, seed 1234) and, for seeds 0..2, which head of each layer scored
highest (roles are not fixed in advance).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mha.induction_train import BLOCKS, EVAL_BLOCK, evaluate, train  # noqa: E402

RECIPE = {"steps": 1500, "lr": 1e-2, "batch": 64, "d_model": 32, "positions": "rotary"}
MODELS = {"induction_2l_1h": 1, "induction_2l_4h": 4}
SURVEY_SEEDS = (0, 1, 2)


def summary(name, metrics):
    prev = [[round(x, 3) for x in layer] for layer in metrics["previous"]]
    ind = [[round(x, 3) for x in layer] for layer in metrics["induction"]]
    return (f"{name}: loss first half {metrics['first']:.3f}, repeated half "
            f"{metrics['repeated']:.3f} (log 26 = {metrics['log_vocab']:.3f}); "
            f"previous-token scores {prev}; induction scores {ind}")


def build(name, n_heads):
    runs = {}
    for seed in SURVEY_SEEDS:
        model, history = train(n_heads=n_heads, seed=seed, **RECIPE)
        metrics = evaluate(model)
        runs[seed] = (model, history, metrics)
        print(f"  seed {seed}: {history['seconds']:.1f} s; " + summary(name, metrics), flush=True)
    model, history, metrics = runs[0]
    survey = [{"seed": s, "first": m["first"], "repeated": m["repeated"],
               "best_previous_head": int(np.argmax(m["previous"][0])),
               "best_induction_head": int(np.argmax(m["induction"][1])),
               "best_previous": max(m["previous"][0]), "best_induction": max(m["induction"][1])}
              for s, (_, _, m) in runs.items()]
    record = {"recipe": dict(RECIPE, n_heads=n_heads, seed=0, blocks=list(BLOCKS),
                             threads=torch.get_num_threads(), torch=str(torch.__version__)),
              "train_seconds": round(history["seconds"], 2),
              "loss_curve": [round(x, 4) for x in history["loss"]],
              "eval_block": EVAL_BLOCK, "metrics": metrics, "survey": survey}
    return {"config": model.config, "state_dict": model.state_dict(), "record": record}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the shipped files instead of writing them")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread: the same sums in the same order on every run
    out_dir = ROOT / "src" / "mha" / "data"
    out_dir.mkdir(exist_ok=True)
    worst = 0.0
    for name, n_heads in MODELS.items():
        print(f"{name} ({n_heads} head(s) per layer)", flush=True)
        saved = build(name, n_heads)
        path = out_dir / f"{name}.pt"
        if args.check:
            shipped = torch.load(path, map_location="cpu", weights_only=True)
            diff = max(float((saved["state_dict"][k] - v).abs().max())
                       for k, v in shipped["state_dict"].items())
            worst = max(worst, diff)
            print(f"  max |retrained - shipped| weight: {diff:.2e}")
        else:
            torch.save(saved, path)
            print(f"  wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    if args.check and worst > 1e-4:
        sys.exit(f"retrained weights differ from the shipped ones by {worst:.2e}")


if __name__ == "__main__":
    main()
