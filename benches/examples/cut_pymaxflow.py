"""PyMaxflow on the graph dumped by `cut_bench` or `flow_bench --dump` (same
capacities, same arcs): DIR holds source.npy, sink.npy, right.npy and down.npy,
each an h x w int32 plane.

usage: python3 cut_pymaxflow.py DIR [REPS]

One arc pair per neighbour pair, as in trident's grid (add_grid_edges with a
one-neighbour structure and symmetric=True, once for right, once for down).
Times g.maxflow() only (graph build excluded), best and median of REPS fresh
graphs, and prints the flow value and the size of the source side.
"""
import sys
import time

import maxflow
import numpy as np

d = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
src, snk, right, down = (np.load(f"{d}/{n}.npy") for n in ("source", "sink", "right", "down"))
h, w = src.shape
s_right = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0]])
s_down = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]])

times, builds = [], []
for _ in range(reps):
    t0 = time.perf_counter()
    g = maxflow.Graph[int]()
    nodes = g.add_grid_nodes((h, w))
    g.add_grid_edges(nodes, weights=right, structure=s_right, symmetric=True)
    g.add_grid_edges(nodes, weights=down, structure=s_down, symmetric=True)
    g.add_grid_tedges(nodes, src, snk)
    t1 = time.perf_counter()
    flow = g.maxflow()
    t2 = time.perf_counter()
    times.append((t2 - t1) * 1e3)
    builds.append((t2 - t0) * 1e3)
    # get_grid_segments is True on the sink side.
    side = int((~g.get_grid_segments(nodes)).sum())
times.sort()
print(f"cut-{h} PyMaxflow {maxflow.__version__}: flow {flow}, source side {side} nodes; "
      f"maxflow() min {times[0]:.1f} ms median {times[len(times)//2]:.1f} ms; "
      f"with build min {min(builds):.1f} ms")
