"""Run by every kernel ``make present`` starts (it sets PYTHONSTARTUP to this file): preload the
deck (:func:`demos.topics.preload`) so the first live cell shows its figure at once. IPython runs
this in the notebook's namespace, so it leaves no name there. A PYTHONSTARTUP the presenter had
set before runs afterwards (``make present`` keeps it in DEMOS_USER_PYTHONSTARTUP)."""


def _jitdeck_preload():
    try:
        from demos.topics import preload

        preload()
    except Exception as exc:  # noqa: BLE001 - the kernel starts whatever happens here
        print(f"deck preload skipped: {exc}")
    try:
        from demos.engine.settings import get

        user = get("DEMOS_USER_PYTHONSTARTUP")  # an existing file, or one line saying it is not
    except Exception as exc:  # noqa: BLE001
        print(f"your PYTHONSTARTUP skipped: {exc}")
        user = None
    if user is not None:
        with open(user) as f:
            exec(compile(f.read(), str(user), "exec"), globals())


_jitdeck_preload()
del _jitdeck_preload
