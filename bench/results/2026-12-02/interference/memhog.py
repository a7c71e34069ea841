import sys, time, numpy as np
busy, period = float(sys.argv[1]) / 1e3, float(sys.argv[2]) / 1e3
a = np.ones(16 << 20, np.float32); b = np.empty_like(a)
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < busy: np.copyto(b, a)
    time.sleep(max(0.0, period - busy))
