// Small statistics helpers for the views. Pure functions (no DOM), so they can be imported and
// checked under node.

/**
 * Benjamini-Hochberg q-values of `pvalues` (numbers; null, undefined or non-finite entries are
 * left out of the family and get null), in the input's order. With the m finite p sorted
 * ascending, q_(i) = min over j >= i of p_(j) * m / j, capped at 1: rejecting every test with
 * q <= alpha keeps the expected share of false discoveries among the rejections at most alpha.
 */
export function bhQValues(pvalues) {
  const list = Array.isArray(pvalues) ? pvalues : [];
  const out = list.map(() => null);
  const idx = [];
  list.forEach((p, i) => {
    const n = p === null || p === undefined || p === '' ? NaN : Number(p);
    if (Number.isFinite(n)) idx.push([Math.min(Math.max(n, 0), 1), i]);
  });
  const m = idx.length;
  idx.sort((a, b) => a[0] - b[0]);
  let running = 1;
  for (let k = m - 1; k >= 0; k -= 1) {
    const [p, i] = idx[k];
    running = Math.min(running, (p * m) / (k + 1));
    out[i] = running;
  }
  return out;
}
