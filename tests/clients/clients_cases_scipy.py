"""scipy with SCIPY_ARRAY_API=1: scipy.stats, scipy.special, scipy.fft, scipy.integrate,
scipy.cluster (conftest.py sets the switch before scipy is imported)."""
from clients_harness import case, darray_bug, library_bug  # noqa: F401

LIB = "scipy"


def _stats():
    import scipy.stats as stats
    return stats


def _special():
    import scipy.special as special
    return special


def sp_case(name, inputs=("X",), **kw):
    return case(LIB, name, inputs, **kw)


# -- scipy.stats: one-sample summaries along an axis, and over everything ----------------------

for _name in ("zscore", "skew", "kurtosis", "sem", "variation", "gmean", "hmean", "tmean", "tvar",
              "tstd", "tmin", "tmax", "entropy", "moment", "circmean", "circstd"):
    sp_case(_name, ("Xpos",))(lambda xp, Xpos, _n=_name: getattr(_stats(), _n)(Xpos, axis=0))

sp_case("zscore_axis_none", ("X",))(lambda xp, X: _stats().zscore(X, axis=None))
sp_case("variation_axis_none", ("Xpos",))(lambda xp, Xpos: _stats().variation(Xpos, axis=None))
sp_case("pmean", ("Xpos",))(lambda xp, Xpos: _stats().pmean(Xpos, 2.5, axis=1))
sp_case("trim_mean", ("X",))(lambda xp, X: _stats().trim_mean(X, 0.1, axis=0))
sp_case("describe", ("X",))(lambda xp, X: tuple(_stats().describe(X, axis=0))[2:])
sp_case("differential_entropy", ("v",))(lambda xp, v: _stats().differential_entropy(v))

# -- scipy.stats: tests ----------------------------------------------------------------------

sp_case("pearsonr", ("v", "w"))(lambda xp, v, w: tuple(_stats().pearsonr(v, w))[:2])
# popmean is made with xp.asarray(0.1) (no device=): uncommitted, it joins X's mesh
sp_case("ttest_1samp", ("X",))(
    lambda xp, X: tuple(_stats().ttest_1samp(X, 0.1, axis=0))[:2])
sp_case("ttest_ind", ("X", "X2"))(lambda xp, X, X2: tuple(_stats().ttest_ind(X, X2, axis=0))[:2])
sp_case("ttest_rel", ("X", "X2"))(lambda xp, X, X2: tuple(_stats().ttest_rel(X, X2, axis=0))[:2])
sp_case("bartlett", ("v", "w"))(lambda xp, v, w: tuple(_stats().bartlett(v, w)))
sp_case("chisquare", ("Xpos",))(lambda xp, Xpos: tuple(_stats().chisquare(Xpos, axis=0)))
sp_case("power_divergence", ("Xpos",))(
    lambda xp, Xpos: tuple(_stats().power_divergence(Xpos, axis=0, lambda_="log-likelihood")))
sp_case("skewtest", ("X",))(lambda xp, X: tuple(_stats().skewtest(X, axis=None)))
sp_case("f_oneway", ("v", "w"))(lambda xp, v, w: tuple(_stats().f_oneway(v, w + 0.3)))
sp_case("boxcox_llf", ("Xpos",))(lambda xp, Xpos: _stats().boxcox_llf(0.5, Xpos, axis=0))

# -- scipy.special ---------------------------------------------------------------------------

for _name in ("erf", "erfc", "expit", "gammaln", "ndtr", "entr", "log_ndtr", "i0e"):
    sp_case(_name, ("X",))(lambda xp, X, _n=_name: getattr(_special(), _n)(X))

sp_case("logit", ("Xprob",))(lambda xp, Xprob: _special().logit(Xprob))
sp_case("logsumexp", ("X",))(lambda xp, X: _special().logsumexp(X, axis=1))
sp_case("logsumexp_all", ("X",))(lambda xp, X: _special().logsumexp(X))
sp_case("softmax", ("X",))(lambda xp, X: _special().softmax(X, axis=1))
sp_case("log_softmax", ("X",))(lambda xp, X: _special().log_softmax(X, axis=0))
sp_case("xlogy", ("Xpos", "X2"))(lambda xp, Xpos, X2: _special().xlogy(X2, Xpos))
sp_case("rel_entr", ("Xprob", "Xpos"))(lambda xp, Xprob, Xpos: _special().rel_entr(Xprob, Xpos))

# -- scipy.fft, scipy.integrate, scipy.cluster -----------------------------------------------

sp_case("fft_fft", ("X",))(lambda xp, X: __import__("scipy.fft").fft.fft(X, axis=0))
sp_case("fft_rfft2", ("X",))(lambda xp, X: __import__("scipy.fft").fft.rfft2(X))
sp_case("fft_ifftn", ("X",))(lambda xp, X: __import__("scipy.fft").fft.ifftn(X))
sp_case("trapezoid", ("X",))(
    lambda xp, X: __import__("scipy.integrate").integrate.trapezoid(X, axis=0))
sp_case("cumulative_trapezoid", ("X",))(
    lambda xp, X: __import__("scipy.integrate").integrate.cumulative_trapezoid(X, axis=1))
sp_case("simpson", ("X",))(
    lambda xp, X: __import__("scipy.integrate").integrate.simpson(X, axis=0))
sp_case("cluster_whiten", ("X",))(
    lambda xp, X: __import__("scipy.cluster.vq").cluster.vq.whiten(X))

# scipy makes the output with xp.empty(shape) (no device=) and writes distributed values into
# it: the uncommitted output joins the inputs' mesh (issue 53, item 0)
sp_case("cumulative_simpson", ("X",))(
    lambda xp, X: __import__("scipy.integrate").integrate.cumulative_simpson(X, axis=0))
sp_case("derivative_exp", ("v",), rtol=1e-6, atol=1e-6)(
    lambda xp, v: __import__("scipy.differentiate").differentiate.derivative(xp.exp, v).df)
