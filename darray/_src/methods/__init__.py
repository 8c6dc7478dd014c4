"""The top floor: DistArray's operators and methods, attached from the namespace below.

table.py: the one table of methods, dunders and namespace functions, and `register`.
"""
