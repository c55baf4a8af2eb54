"""Offline tools of the verifier: build the development set, fit the combiner.

Nothing here is imported at run time; the fitting script needs only numpy (scikit-learn,
in the ``train`` extra, is used when installed to cross-check the fit).
"""
