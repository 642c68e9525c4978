#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Experiment 1 by flow class (e1-incast.md, "The co-located flows").

usage: victims.py RUNDIR

RUNDIR/<name>/s<seed>/fct.csv as written by `uccl-sim --out`. Classes of
completed flows: all; incast (flow % 31 < 15: hosts 1..15 to host 0);
victims (permutation flows not to host 0), split by sender: an incast
sender (1..15, shares its NIC with an incast flow) or host 0 (its ACKs and
GRANTs come back through host 0's downlink); and flows with neither end
in any incast flow. Prints per <name> the median over seeds of each
seed's nearest-rank p50 and p99 (us), and victims p99 / eqds-sack's.
"""
import csv
import os
import statistics
import sys

CLASSES = ('all', 'incast', 'victims', 'v-from-1..15', 'v-from-0', 'uninvolved')


def pct(v, p):
    v = sorted(v)
    return v[max((len(v) * p + 99) // 100, 1) - 1] if v else float('nan')


def classes(path):
    c = {k: [] for k in CLASSES}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    incast = [int(r['flow']) % 31 < 15 for r in rows]
    involved = {r[e] for r, i in zip(rows, incast) if i for e in ('src', 'dst')}
    for r, i in zip(rows, incast):
        if r['status'] != '0':
            continue
        v = float(r['fct_us'])
        c['all'].append(v)
        if i:
            c['incast'].append(v)
        elif r['dst'] != '0':
            c['victims'].append(v)
            c['v-from-0' if r['src'] == '0' else 'v-from-1..15'].append(v)
        if r['src'] not in involved and r['dst'] not in involved:
            c['uninvolved'].append(v)
    return c


run = sys.argv[1]
res = {}
for name in sorted(os.listdir(run)):
    d = os.path.join(run, name)
    per = [classes(os.path.join(d, s, 'fct.csv')) for s in sorted(os.listdir(d))]
    res[name] = {(k, p): statistics.median(pct(c[k], p) for c in per)
                 for k in CLASSES[:-1] for p in (50, 99)}
    res[name]['n'] = {k: sum(len(c[k]) for c in per) for k in CLASSES}

cols = CLASSES[:-1]
print('| run | ' + ' | '.join(f'{k} p50 | {k} p99' for k in cols) + ' | victims p99 / eqds |')
print('|---' * (2 * len(cols) + 2) + '|')
eq = res['eqds-sack'][('victims', 99)]
for name, r in res.items():
    print(f'| {name} | ' + ' | '.join(f'{r[(k, 50)]:.1f} | {r[(k, 99)]:.1f}' for k in cols)
          + f" | {r[('victims', 99)] / eq:.2f} |")
print('flows over all seeds:', {k: res['eqds-sack']['n'][k] for k in CLASSES})
