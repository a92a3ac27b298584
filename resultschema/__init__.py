"""The result model: one definition of a measurement row's columns
(`resultschema.columns`), below both `campaign` and `analysis`.

Standard library only, so the job side on a compute node, the CLI's fast
read paths and the analysis all derive their column lists from it.
"""
