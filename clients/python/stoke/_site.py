"""This Python's site-packages, named to Stoke's Java side.

A system or user install of torch keeps torchvision's bundled libnvjpeg (the GPU decode's, found by
``io.stoke.gpu.NvjpegLibrary``) in a site-packages folder that no ``VIRTUAL_ENV`` names: ``python -m
stoke`` and ``stoke.DataLoader``'s producer are told where this Python's are.
"""

import os
from typing import Dict, List

#: The variable ``io.stoke.gpu.NvjpegLibrary`` reads (``NvjpegLibrary.SITE_PACKAGES_ENV``).
ENV = "STOKE_PYTHON_SITE_PACKAGES"


def site_packages() -> List[str]:
    """This Python's site-packages folders: the environment's, then the user's, each once.

    Returns:
        The folders that exist, in that order.
    """
    import site
    import sysconfig

    found = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    found += site.getsitepackages() if hasattr(site, "getsitepackages") else []
    found += [site.getusersitepackages()] if site.ENABLE_USER_SITE else []
    return [d for i, d in enumerate(found) if d not in found[:i] and os.path.isdir(d)]


def name_site_packages(env: Dict[str, str]) -> Dict[str, str]:
    """Sets :data:`ENV` in ``env`` to this Python's site-packages, unless it is set already.

    Args:
        env: a process's environment, changed in place.

    Returns:
        ``env``.
    """
    env.setdefault(ENV, os.pathsep.join(site_packages()))
    return env
