"""Run by every kernel ``make present`` starts (it sets PYTHONSTARTUP to this file): preload the
deck (:func:`demos.topics.preload`) so the first live cell shows its figure at once. IPython runs
this in the notebook's namespace, so it leaves no name there. A PYTHONSTARTUP the presenter had
set before runs afterwards (``make present`` keeps it in DEMOS_USER_PYTHONSTARTUP)."""


def _jitdeck_preload():
    import os

    try:
        from demos.topics import preload

        preload()
    except Exception as exc:  # noqa: BLE001 - the kernel starts whatever happens here
        print(f"deck preload skipped: {exc}")
    user = os.environ.get("DEMOS_USER_PYTHONSTARTUP")
    if user and os.path.isfile(user):
        with open(user) as f:
            exec(compile(f.read(), user, "exec"), globals())


_jitdeck_preload()
del _jitdeck_preload
