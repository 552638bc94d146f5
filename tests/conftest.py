def pytest_configure(config):
    config.addinivalue_line("markers", "torch: needs torch installed (the IR oracle tests)")
