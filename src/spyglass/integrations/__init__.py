"""Where else people profile: IPython and Jupyter (ipython_magic), pytest (pytest_plugin)."""
