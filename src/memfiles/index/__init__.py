"""The semantic index: derived from the files and disposable. Heavy imports happen inside functions."""
