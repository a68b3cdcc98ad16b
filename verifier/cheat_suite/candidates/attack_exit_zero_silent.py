# ATTACK (family channel_lies: a clean exit status and no answer).
# On its first call the kernel raises SystemExit(0) - a BaseException that "except Exception"
# does not catch - so a caller without a catch-all unwinds and the process ends with status
# 0 before any verdict or message is written. In case the caller does catch it and goes on,
# a thread started just before ends the process with os._exit(0) 0.5 s later anyway.
import os
import threading

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        threading.Timer(0.5, os._exit, (0,)).start()
        raise SystemExit(0)
