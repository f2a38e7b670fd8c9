// Shape of the double binary tree, kept apart from the programs so it can be unit-tested alone.
//
// A tree rooted at rank `root` puts the root on top with a single child; the other m = n-1 ranks
// form a binary tree below it. That lower tree is "in-order" over positions 1..m: a position's
// height is its lowest set bit, so odd positions (half of them) are leaves, and its children sit
// half that bit to either side. Tree 1 numbers the positions the other way round (mirrored when m
// is even, rotated by one when m is odd), which turns tree 0's leaves into tree 1's inner nodes:
// every rank forwards data in at most one of the two trees (with m odd, one rank is a leaf in
// both). Each tree carries half of the data, so no rank sends or receives much more than the data
// size, and the depth is about log2(n) + 1.
#pragma once

namespace weft::tree {

// A rank's links in one tree: its parent and up to two children, -1 where absent.
struct Links {
  int parent = -1;
  int child[2] = {-1, -1};
};

// The position at the top of the in-order tree over 1..m: the highest power of two <= m.
inline int topPosition(int m) {
  int top = 1;
  while (top * 2 <= m) top *= 2;
  return top;
}

// Parent position of k in the in-order tree over 1..m, 0 for the top. The natural parent (one
// level up: k - b or k + b, whichever has the next bit set) may lie past m; climbing on from
// there always comes back inside, to the node whose right subtree was cut short.
inline int parentPosition(int m, int k) {
  for (int p = k;;) {
    const int b = p & -p;
    if (b > m) return 0;
    p = (p & (2 * b)) ? p - b : p + b;
    if (p <= m) return p;
  }
}

// Children positions of k (0 where absent): k -+ b/2, the right one pulled closer while past m.
inline void childPositions(int m, int k, int out[2]) {
  const int b = k & -k;
  out[0] = out[1] = 0;
  if (b == 1) return;
  out[0] = k - b / 2;
  for (int h = b / 2; h >= 1; h /= 2)
    if (k + h <= m) {
      out[1] = k + h;
      return;
    }
}

inline int modn(long a, int n) { return static_cast<int>(((a % n) + n) % n); }

// Position of rank r (r != root) in tree t (0 or 1) of n ranks, and back.
inline int positionOf(int n, int root, int t, int r) {
  const int m = n - 1, u = modn(long(r) - root - 1, n);  // 0..m-1
  if (t == 0) return u + 1;
  return m % 2 == 0 ? m - u : modn(u - 1, m) + 1;
}
inline int rankAt(int n, int root, int t, int k) {
  const int m = n - 1;
  const int u = t == 0 ? k - 1 : (m % 2 == 0 ? m - k : k % m);
  return modn(long(u) + root + 1, n);
}

// Rank r's links in tree t of n ranks rooted at `root`.
inline Links linksOf(int n, int root, int t, int r) {
  Links l;
  if (n < 2) return l;
  const int m = n - 1, top = topPosition(m);
  if (r == root) {
    l.child[0] = rankAt(n, root, t, top);
    return l;
  }
  const int k = positionOf(n, root, t, r);
  const int p = parentPosition(m, k);
  l.parent = p == 0 ? root : rankAt(n, root, t, p);
  int c[2];
  childPositions(m, k, c);
  for (int i = 0; i < 2; ++i) l.child[i] = c[i] == 0 ? -1 : rankAt(n, root, t, c[i]);
  return l;
}

}  // namespace weft::tree
