"""The dispatcher: a pure decision core (nomination, election, remote state) and its async shell."""
