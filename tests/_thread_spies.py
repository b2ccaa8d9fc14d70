"""Spies on the thread counts a fit asks for."""


def threads_asked(monkeypatch, module):
    """The thread counts ``module.mapped_on_threads`` is called with."""
    seen = []
    original = module.mapped_on_threads

    def spy(n_threads):
        seen.append(n_threads)
        return original(n_threads)

    monkeypatch.setattr(module, "mapped_on_threads", spy)
    return seen
