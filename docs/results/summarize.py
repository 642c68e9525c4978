#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Summarise the runs of run-sim.sh (issue #4 experiments 1-4).

usage: summarize.py RUNDIR DATADIR

RUNDIR/<scenario>/s<seed>/{summary.txt,fct.csv,throughput.csv} as written by
uccl-sim; writes DATADIR/e*.csv and prints the markdown tables. Medians are
over the seeds (the median of each seed's value, not of pooled flows);
percentiles are nearest rank, as uccl-sim computes them.
"""
import csv
import os
import statistics
import sys

run, data = sys.argv[1], sys.argv[2]
os.makedirs(data, exist_ok=True)


def seeds(name):
    d = os.path.join(run, name)
    return sorted((int(s[1:]), os.path.join(d, s)) for s in os.listdir(d) if s.startswith('s'))


def summary(path):
    out = {}
    with open(os.path.join(path, 'summary.txt')) as f:
        for line in f:
            k, _, v = line.strip().partition(' ')
            out[k] = v.strip()
    return out


def num(s, k):
    try:
        return float(s.get(k, 'nan'))
    except ValueError:
        return float('nan')


def fcts(path):
    rows = []
    with open(os.path.join(path, 'fct.csv')) as f:
        for r in csv.DictReader(f):
            rows.append(r)
    return rows


def pct(v, p):
    v = sorted(v)
    if not v:
        return float('nan')
    k = (len(v) * p + 99) // 100
    return v[max(k, 1) - 1]


def med(v):
    v = [x for x in v if x == x]
    return statistics.median(v) if v else float('nan')


def fmt(x, nd=1):
    return 'n/a' if x != x else f'{x:.{nd}f}'


seedlist = None

# ---- experiment 1 ----
E1 = [('window', 'sack'), ('swift', 'sack'), ('timely', 'sack'), ('dcqcn', 'sack'),
      ('hint', 'sack'), ('eqds', 'sack'), ('none', 'sack'), ('dcqcn', 'gbn'), ('hint+inband', 'sack'),
      ('window+adaptive', 'sack'),
      # InfiniBand-like baselines: lossless fabric (pfc = on), Go-Back-N
      ('dcqcn', 'gbn-pfc'), ('none', 'gbn-pfc')]
rows = []
ccdf = {}
for cc, rec in E1:
    name = f'e1-incast-{cc}-{rec}'
    per = {k: [] for k in ('p50', 'p99', 'max', 'in50', 'in99', 'pm50', 'pm99', 'failed',
                           'retx', 'timeouts', 'drops', 'pauses', 'overflow')}
    pooled = []
    ss = seeds(name)
    seedlist = [s for s, _ in ss]
    for s, path in ss:
        sm = summary(path)
        inc, perm, allf = [], [], []
        for r in fcts(path):
            if r['status'] != '0':
                continue
            v = float(r['fct_us'])
            allf.append(v)
            (inc if int(r['flow']) % 31 < 15 else perm).append(v)
        pooled += allf
        per['p50'].append(pct(allf, 50))
        per['p99'].append(pct(allf, 99))
        per['max'].append(max(allf))
        per['in50'].append(pct(inc, 50))
        per['in99'].append(pct(inc, 99))
        per['pm50'].append(pct(perm, 50))
        per['pm99'].append(pct(perm, 99))
        per['failed'].append(num(sm, 'failed') + num(sm, 'unfinished'))
        per['retx'].append(num(sm, 'retx_pkts'))
        per['timeouts'].append(num(sm, 'timeouts'))
        per['drops'].append(num(sm, 'queue_drops'))
        per['pauses'].append(num(sm, 'pfc_pauses') if 'pfc' in sm else 0.0)
        per['overflow'].append(num(sm, 'pfc_overflow') if 'pfc' in sm else 0.0)
    pooled.sort()
    ccdf[f'{cc}-{rec}'] = pooled
    rows.append((cc, rec, {k: med(v) for k, v in per.items()}, per))
base = next(r for r in rows if r[0] == 'dcqcn' and r[1] == 'gbn')[2]['p99']
with open(os.path.join(data, 'e1-incast.csv'), 'w') as f:
    f.write('cc,recovery,seeds,p50_us,p99_us,max_us,incast_p50_us,incast_p99_us,'
            'perm_p50_us,perm_p99_us,failed_flows,retx_pkts,timeouts,queue_drops,'
            'p99_ratio_vs_gbn_dcqcn,pfc_pauses,pfc_overflow\n')
    for cc, rec, m, _ in rows:
        f.write(f"{cc},{rec},{' '.join(map(str, seedlist))},{m['p50']:.1f},{m['p99']:.1f},"
                f"{m['max']:.1f},{m['in50']:.1f},{m['in99']:.1f},{m['pm50']:.1f},"
                f"{m['pm99']:.1f},{m['failed']:.0f},{m['retx']:.0f},{m['timeouts']:.0f},"
                f"{m['drops']:.0f},{base / m['p99']:.2f},{m['pauses']:.0f},"
                f"{m['overflow']:.0f}\n")
for k, v in ccdf.items():
    with open(os.path.join(data, f'e1-ccdf-{k}.csv'), 'w') as f:
        f.write('fct_us,ccdf\n')
        n = len(v)
        for i, x in enumerate(v):
            f.write(f'{x:.3f},{(n - i - 1) / n if i < n - 1 else 1.0 / n:.6f}\n')
print(f'## Experiment 1 (seeds {seedlist}, medians over seeds)\n')
print('| cc | recovery | p50 all (us) | p99 all (us) | incast p50 | incast p99 | perm p50 | perm p99 '
      '| failed flows | retx pkts | timeouts | baseline p99 / this p99 |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|')
for cc, rec, m, _ in rows:
    print(f"| {cc} | {rec} | {fmt(m['p50'])} | {fmt(m['p99'])} | {fmt(m['in50'])} | "
          f"{fmt(m['in99'])} | {fmt(m['pm50'])} | {fmt(m['pm99'])} | {m['failed']:.0f} | "
          f"{m['retx']:.0f} | {m['timeouts']:.0f} | {base / m['p99']:.2f} |")
print('\nper-seed p99 (us):')
for cc, rec, _, per in rows:
    print(f"  {cc}-{rec}: " + ', '.join(fmt(x) for x in per['p99']))
eq = next(r for r in rows if r[0] == 'eqds')[2]
print('\nagainst the InfiniBand-like (lossless, PFC) baselines:\n')
print('| cc | recovery | p50 all (us) | p99 all (us) | incast p50 | incast p99 | perm p50 | perm p99 '
      '| retx pkts | timeouts | drops | pauses | overflow | baseline p99 / eqds p99 |')
print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|')
for cc, rec, m, _ in rows:
    if rec.endswith('-pfc') or cc == 'eqds':
        print(f"| {cc} | {rec} | {fmt(m['p50'])} | {fmt(m['p99'])} | {fmt(m['in50'])} | "
              f"{fmt(m['in99'])} | {fmt(m['pm50'])} | {fmt(m['pm99'])} | {m['retx']:.0f} | "
              f"{m['timeouts']:.0f} | {m['drops']:.0f} | {m['pauses']:.0f} | "
              f"{m['overflow']:.0f} | {m['p99'] / eq['p99']:.2f} |")

# ---- experiment 2 ----
LOSS = ['none', '0.01', '0.02', '0.05', '0.1', '0.2', '0.5', '1']
print(f'\n## Experiment 2 (seeds {seedlist}, median goodput, kept = loss / loss-free)\n')
with open(os.path.join(data, 'e2-loss.csv'), 'w') as f:
    f.write('recovery,cc,loss_pct,seeds,goodput_gbps,kept_pct,retx_pkts,timeouts,failed_flows\n')
    table = {}
    for rec in ('sack', 'gbn'):
        for cc in ('window', 'none', 'window+adaptive'):
            ref = None
            for l in LOSS:
                name = f"e2-loss-{rec}-{cc}-{l.replace('.', 'p')}"
                g, rx, to, fl = [], [], [], []
                for s, path in seeds(name):
                    sm = summary(path)
                    ok = num(sm, 'failed') + num(sm, 'unfinished') == 0
                    g.append(num(sm, 'goodput_gbps') if ok else 0.0)
                    rx.append(num(sm, 'retx_pkts'))
                    to.append(num(sm, 'timeouts'))
                    fl.append(0 if ok else 1)
                gm = med(g)
                if l == 'none':
                    ref = gm
                kept = 100.0 * gm / ref
                table[(rec, cc, l)] = (gm, kept)
                f.write(f"{rec},{cc},{0 if l == 'none' else l},{' '.join(map(str, seedlist))},"
                        f"{gm:.3f},{kept:.1f},{med(rx):.0f},{med(to):.0f},{sum(fl)}\n")
print('| loss | sack+window Gbit/s (kept) | gbn+window | sack+none | gbn+none '
      '| sack+window+adaptive | gbn+window+adaptive |')
print('|---|---|---|---|---|---|---|')
for l in LOSS:
    cells = []
    for rec, cc in (('sack', 'window'), ('gbn', 'window'), ('sack', 'none'), ('gbn', 'none'),
                    ('sack', 'window+adaptive'), ('gbn', 'window+adaptive')):
        gm, kept = table[(rec, cc, l)]
        cells.append(f'{gm:.1f} ({kept:.1f}%)')
    print(f"| {'0' if l == 'none' else l + '%'} | " + ' | '.join(cells) + ' |')

# ---- experiment 3 ----
print(f'\n## Experiment 3 (seeds {seedlist}, medians)\n')
print('| spines (oversub) | cc | paths | dupthresh | goodput to last completion (Gbit/s) '
      '| sum of per-flow rates (Gbit/s) | FCT p50 (us) | FCT max (us) | fast retx | drops |')
print('|---|---|---|---|---|---|---|---|---|---|')
res3 = {}


def e3_row(f, name, sp, cc, label, p, d):
    """One experiment-3 row: medians over seeds into res3, the CSV and the table."""
    g, sf, p50, mx, fr, dr, fl = [], [], [], [], [], [], 0
    for s, path in seeds(name):
        sm = summary(path)
        g.append(num(sm, 'goodput_gbps'))
        sf.append(sum(float(r['gbps']) for r in fcts(path) if r['status'] == '0'))
        p50.append(num(sm, 'fct_p50_us'))
        mx.append(num(sm, 'fct_max_us'))
        fr.append(num(sm, 'fast_retx'))
        dr.append(num(sm, 'queue_drops'))
        fl += int(num(sm, 'failed') + num(sm, 'unfinished'))
    m = (med(g), med(sf), med(p50), med(mx), med(fr), med(dr))
    res3[(sp, cc, p, d)] = m
    f.write(f"{sp},{8 / sp:.0f}:1,{cc},{p},{d},{' '.join(map(str, seedlist))},"
            f"{m[0]:.1f},{m[1]:.1f},{m[2]:.1f},{m[3]:.1f},{m[4]:.0f},{m[5]:.0f},{fl}\n")
    print(f"| {sp} ({8 / sp:.0f}:1) | {label} | {p} | {d} | {m[0]:.0f} | {m[1]:.0f} | "
          f"{m[2]:.0f} | {m[3]:.0f} | {m[4]:.0f} | {m[5]:.0f} |")


with open(os.path.join(data, 'e3-ecmp.csv'), 'w') as f:
    f.write('spines,oversub,cc,paths,dupthresh,seeds,goodput_gbps,sum_flow_gbps,fct_p50_us,'
            'fct_max_us,fast_retx,queue_drops,failed_flows\n')
    for sp in (8, 4):
        for cc in ('window', 'none'):
            for p, d in ((1, 3), (1, 64), (256, 3), (256, 64)):
                e3_row(f, f'e3-ecmp-s{sp}-p{p}-d{d}-{cc}', sp, cc, cc, p, d)
    # spraying per packet (4 KiB chunks, one packet each), window, dupthresh 64
    for sp in (8, 4):
        for p in (1, 256):
            e3_row(f, f'e3-ecmp-s{sp}-p{p}-d64-window-c4k', sp, 'window-c4k',
                   'window, 4 KiB chunks', p, 64)
    # a path per packet, 32 KiB chunks; its one-path reference is the
    # window rows above (one path: every packet takes path 0 either way)
    for sp in (8, 4):
        for d in (3, 64):
            e3_row(f, f'e3-ecmp-s{sp}-p256-d{d}-window-pp', sp, 'window-pp',
                   'window, a path per packet', 256, d)
    # a path per run of 32 KiB chunks (spray = run, path_run_bytes), 1:1 only
    for r in ('64KiB', '128KiB'):
        e3_row(f, f'e3-ecmp-s8-p256-d3-window-r{r}', 8, f'window-r{r}',
               f'window, a path per {r} run', 256, 3)
print('\nratios 256 paths / 1 path (goodput to last completion; sum of per-flow rates):')
for sp in (8, 4):
    for cc in ('window', 'none'):
        for d in (3, 64):
            a, b = res3[(sp, cc, 256, d)], res3[(sp, cc, 1, d)]
            print(f'  spines {sp} cc {cc} dupthresh {d}: {a[0] / b[0]:.2f}x ; {a[1] / b[1]:.2f}x')
    a, b = res3[(sp, 'window-c4k', 256, 64)], res3[(sp, 'window-c4k', 1, 64)]
    print(f'  spines {sp} cc window, 4 KiB chunks, dupthresh 64: {a[0] / b[0]:.2f}x ; {a[1] / b[1]:.2f}x')
    for d in (3, 64):
        a, b = res3[(sp, 'window-pp', 256, d)], res3[(sp, 'window', 1, d)]
        print(f'  spines {sp} cc window, a path per packet, dupthresh {d}: '
              f'{a[0] / b[0]:.2f}x ; {a[1] / b[1]:.2f}x')
for r in ('64KiB', '128KiB'):
    a, b = res3[(8, f'window-r{r}', 256, 3)], res3[(8, 'window', 1, 3)]
    print(f'  spines 8 cc window, a path per {r} run, dupthresh 3: '
          f'{a[0] / b[0]:.2f}x ; {a[1] / b[1]:.2f}x')

# ---- experiment 4 ----
E4_CCS = ('window', 'swift', 'timely', 'dcqcn', 'hint', 'eqds', 'none', 'hint+inband')


def e4_rows(suffix):
    rows = []
    for cc in E4_CCS:
        name = f'e4-fair-{cc}{suffix}'
        js, jf, g, to, dr = [], [], [], [], []
        for s, path in seeds(name):
            sm = summary(path)
            js.append(num(sm, 'jain_steady'))
            jf.append(num(sm, 'jain'))
            g.append(num(sm, 'goodput_gbps'))
            to.append(num(sm, 'timeouts'))
            dr.append(num(sm, 'queue_drops'))
        rows.append((cc, name, js, jf, g, to, dr))
        print(f"| {cc} | {med(js):.3f} | {med(jf):.3f} | {med(g):.1f} | {med(to):.0f} | {med(dr):.0f} | "
              + ', '.join(f'{x:.3f}' for x in js) + ' |')
    return rows


print(f'\n## Experiment 4 (seeds {seedlist}, medians; base RTT 5 us given)\n')
print('| cc | jain_steady | jain (per-flow bytes/FCT) | goodput (Gbit/s) | timeouts | drops | per-seed jain_steady |')
print('|---|---|---|---|---|---|---|')
with open(os.path.join(data, 'e4-fair.csv'), 'w') as f:
    f.write('cc,base_rtt,seeds,jain_steady,jain_flows,goodput_gbps,timeouts,queue_drops\n')
    for cc, name, js, jf, g, to, dr in e4_rows(''):
        f.write(f"{cc},5us,{' '.join(map(str, seedlist))},{med(js):.4f},{med(jf):.4f},{med(g):.2f},"
                f"{med(to):.0f},{med(dr):.0f}\n")
        # seed 1 throughput over time, for the plot
        src = os.path.join(run, name, 's1', 'throughput.csv')
        if os.path.exists(src):
            with open(src) as i, open(os.path.join(data, f'e4-tput-{cc}.csv'), 'w') as o:
                o.write(i.read())
    print('\nthe same with each flow learning its base RTT (its lowest sample):\n')
    print('| cc | jain_steady | jain (per-flow bytes/FCT) | goodput (Gbit/s) | timeouts | drops | per-seed jain_steady |')
    print('|---|---|---|---|---|---|---|')
    for cc, name, js, jf, g, to, dr in e4_rows('-learned'):
        f.write(f"{cc},learned,{' '.join(map(str, seedlist))},{med(js):.4f},{med(jf):.4f},{med(g):.2f},"
                f"{med(to):.0f},{med(dr):.0f}\n")
