"""`mkq demo`: the whole system in one process on embedded defaults.

A manager cluster and three worker clusters on kubesim, an agent per worker, the manager on
SQLite (or the database given), the Kueue setup of `deploy/examples/`, and a mix of Jobs.
"""
