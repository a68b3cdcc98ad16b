# CHEAT (work on a thread, deferred write): returns a zero tensor immediately and
# fills it from a background thread 20 ms later.
import threading
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.zeros_like(x)

        def work():
            time.sleep(0.02)
            torch.clamp(x, min=0, out=out)

        threading.Thread(target=work, daemon=True).start()
        return out
