"""Diagnostic (issue 14, session 12): how each record's gradient norm splits between encoder and decoder, on the seed-0
validation model that v_s12_levers.py saved (--tag conv_e10_s0); per-record gradients of 100 records a digit by a loop."""
import sys

import numpy as np
import torch

sys.path[:0] = ["benchmarks", "benchmarks/results/tos"]  # run from the repository root
import diag

torch.set_num_threads(1)
train, val = diag.validation_split()
mix = torch.load("/tmp/dpgm_s12_mix_conv_e10_s0.pt", weights_only=False)
x = torch.as_tensor(train.dense(np.uint8), dtype=torch.float32); y = np.asarray(train.labels)
g = torch.Generator().manual_seed(0)
for j in range(10):
    m = mix.models[j]; m.train()
    rows = x[np.flatnonzero(y == j)[:100]]
    enc = [p for p in m.encoder.parameters() if p.requires_grad]; dec = [p for p in m.decoder.parameters() if p.requires_grad]
    ne, nd = [], []
    for r in rows:
        loss = m.loss_per_record(r[None], g).sum()
        ge = torch.autograd.grad(loss, enc, retain_graph=True); gd = torch.autograd.grad(loss, dec)
        ne.append(torch.sqrt(sum((t**2).sum() for t in ge)).item()); nd.append(torch.sqrt(sum((t**2).sum() for t in gd)).item())
    ne, nd = np.array(ne), np.array(nd)
    print(f"digit {j}: median ||g_enc|| {np.median(ne):.1f} ||g_dec|| {np.median(nd):.1f} decoder share of squared norm {np.median(nd**2/(ne**2+nd**2)):.2f}", flush=True)
