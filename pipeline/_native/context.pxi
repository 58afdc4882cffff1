# The second stage's features: each block's first-stage probability in the context of its neighbours' and its page's
# (columns.CONTEXT, by name), then its BASE features and position (columns.CONTEXT_BASE).

cdef dict _X = {name: j for j, name in enumerate(_columns.CONTEXT)}
cdef Py_ssize_t X_PROB = _X["prob"], X_LOGIT = _X["logit"], X_PREV1 = _X["prev1"], X_NEXT1 = _X["next1"]
cdef Py_ssize_t X_MEAN7 = _X["mean7"], X_MEAN21 = _X["mean21"], X_PAGE_MEAN = _X["page_mean"]
cdef Py_ssize_t X_PAGE_MAX = _X["page_max"], X_PAGE_KEPT_SHARE = _X["page_kept_share"]
cdef Py_ssize_t X_MAX_BEFORE = _X["max_before"], X_MAX_AFTER = _X["max_after"]
cdef Py_ssize_t X_LOG_KEPT_WORDS = _X["log_kept_words"], X_KEPT_WORDS_BEFORE = _X["kept_words_before"]
cdef Py_ssize_t N_CONTEXT = len(_columns.CONTEXT)
cdef Py_ssize_t BASE_START = _columns.CONTEXT_BASE[0], BASE_STOP = _columns.CONTEXT_BASE[1]
if [_X[f"{side}{k}"] for k in (1, 2, 3) for side in ("prev", "next")] != list(range(X_PREV1, X_PREV1 + 6)):
    raise ImportError("columns.CONTEXT must list prev1, next1, prev2, next2, prev3, next3 together")
if X_MEAN21 != X_MEAN7 + 1:
    raise ImportError("columns.CONTEXT must list mean7, mean21 together")


@cython.wraparound(False)
@cython.cdivision(True)
def context_rows(const double[::1] prob, X):
    """The second stage's matrix (blocks x columns.context_names(), float64) of the first-stage probabilities ``prob``
    and the dense matrix ``X`` (float32, C order)."""
    cdef Py_ssize_t n = prob.shape[0], i, k, lo, hi, half, c
    cdef Py_ssize_t n_base = BASE_STOP - BASE_START, n_cols = N_CONTEXT + n_base
    cdef double p, share, top, total_d
    cdef float total, kept, running, divisor
    cdef const float[:, ::1] Xv = X
    out_arr = np.empty((n, n_cols))
    cdef double[:, ::1] out = out_arr
    odds_arr = np.empty(n)
    cdef double[::1] odds = odds_arr
    cdef double[::1] cumulative = np.empty(n + 1)
    for i in range(n):
        p = prob[i]
        p = 1e-6 if p < 1e-6 else (1 - 1e-6 if p > 1 - 1e-6 else p)
        odds[i] = p / (1 - p)
    cdef const double[::1] logit = np.log(odds_arr)
    kept_arr = np.expm1(X[:, C_LOG_WORDS])  # float32
    cdef float[::1] kept_words = kept_arr
    share = 0.0
    top = prob[0] if n else 0.0
    cumulative[0] = 0.0
    for i in range(n):
        if prob[i] > 0.5:
            share += 1
        else:
            kept_words[i] = kept_words[i] * 0
        if prob[i] > top:
            top = prob[i]
        cumulative[i + 1] = cumulative[i] + prob[i]
    total = 0.0 + pairwise(&kept_words[0], n) if n else 0.0
    divisor = total if total >= 1.0 else 1.0
    total_d = log1p(<double>total)
    p = (0.0 + pairwise(&prob[0], n)) / n if n else 0.0
    running = 0.0
    for i in range(n):
        out[i, X_PROB] = prob[i]
        out[i, X_LOGIT] = logit[i]
        for k in range(1, 4):
            out[i, X_PREV1 + 2 * (k - 1)] = prob[i - k] if i >= k else 0.0
            out[i, X_NEXT1 + 2 * (k - 1)] = prob[i + k] if i + k < n else 0.0
        for c, half in enumerate((3, 10)):
            lo = i - half if i > half else 0
            hi = i + half + 1 if i + half + 1 < n else n
            out[i, X_MEAN7 + c] = (cumulative[hi] - cumulative[lo]) / (hi - lo)
        out[i, X_PAGE_MEAN] = p
        out[i, X_PAGE_MAX] = top
        out[i, X_PAGE_KEPT_SHARE] = share / n
        out[i, X_MAX_BEFORE] = prob[i] if i == 0 or prob[i] > out[i - 1, X_MAX_BEFORE] else out[i - 1, X_MAX_BEFORE]
        out[i, X_LOG_KEPT_WORDS] = total_d
        running = running + kept_words[i]
        out[i, X_KEPT_WORDS_BEFORE] = running / divisor
        for k in range(n_base):
            out[i, N_CONTEXT + k] = Xv[i, BASE_START + k]
    for i in range(n - 1, -1, -1):
        out[i, X_MAX_AFTER] = prob[i] if i == n - 1 or prob[i] > out[i + 1, X_MAX_AFTER] else out[i + 1, X_MAX_AFTER]
    return out_arr

