"""The verifier's training bench, kept out of the server: building the development set and the NLI
data, training and adapting the cross-encoder, fitting the combiner, sweeps, evaluation and the
published operating points (NOTES.md; data and data cards in data/).

It imports the server's inference code (judges.verifier); no server package imports it (an
import-linter contract in pyproject.toml), and the server image and wheel do not carry it. The
fitting scripts need only numpy; training needs the ``train`` extra.
"""
