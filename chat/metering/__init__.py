"""Metering: what a user's model calls cost, counted against their weekly token budgets.

`usage` sets an estimate aside when a chat turn, a curated search, an answer-check question or the
naming of a week's topics starts (`reserve`), counts each model call (`UsageMeter`) and settles the
estimate when the work ends; `tokens` estimates a text's tokens where no model has counted them.
The rooms that spend tokens sit above this one; how teachers see and change budgets is
`chat/course/allowances.py`. Curated searches reach `reserve` through the seam the collections app
declares (`collections_app/metering.py`), plugged in by the project shell (`currechat/apps.py`).
"""
