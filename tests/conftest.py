"""Shared test setup. Its presence puts tests/ on sys.path, so test modules in
subfolders (tests/browser/) can import helpers such as tests/lab_server.py."""
