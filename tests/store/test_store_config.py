"""`[store]`: backend, url (a secret, RUMI_STORE_URL overrides it), name; and the one way a
store URL is shown (rumi.base.store_url), which never shows its password."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from rumi.base.store_url import endpoint, redacted_url
from rumi.config import ConfigError, default_store_name
from rumi.config_load import load_settings

SECRET = "s3cret-Pw/x?y#z@w"


def load(tmp_path: Path, toml: str, **env: str):
    config = tmp_path / "config.toml"
    config.write_text(f'data_dir = "{tmp_path / "data"}"\n' + toml, encoding="utf-8")
    return load_settings(config, env=env)


def test_sqlite_is_the_default_and_the_name_is_the_host_name(tmp_path: Path) -> None:
    store = load(tmp_path, "").store
    assert store.backend == "sqlite"
    assert store.url is None
    assert store.name == default_store_name()


@pytest.mark.parametrize(("hostname", "name"), [
    ("raspberrypi", "raspberrypi"), ("Casa-Pi.local", "casa-pi"), ("mi pc ñ", "mi-pc"),
    ("---", "rumi"), ("", "rumi"), ("x" * 80, "x" * 20),
])
def test_default_name_from_any_host_name(hostname: str, name: str) -> None:
    assert default_store_name(hostname) == name


def test_postgres_with_url_from_the_file_or_the_environment(tmp_path: Path) -> None:
    toml = ('[store]\nbackend = "postgres"\nname = "casa"\n'
            'url = "postgresql://rumi:from-file@db:5432/rumi"\n')
    store = load(tmp_path, toml).store
    assert store.backend == "postgres" and store.name == "casa"
    assert store.url is not None
    assert store.url.get_secret_value() == "postgresql://rumi:from-file@db:5432/rumi"
    store = load(tmp_path, toml, RUMI_STORE_URL="postgresql://rumi:from-env@db2/rumi").store
    assert store.url is not None
    assert store.url.get_secret_value() == "postgresql://rumi:from-env@db2/rumi"
    assert "from-env" not in repr(store) and "from-env" not in str(store.model_dump(mode="json"))


def test_postgres_without_url_is_one_line_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, '[store]\nbackend = "postgres"\n')
    line = str(caught.value)
    assert "`store.url`" in line and "RUMI_STORE_URL" in line and "\n" not in line
    with pytest.raises(ConfigError, match="`store.url`"):
        load(tmp_path, '[store]\nbackend = "postgres"\nurl = "  "\n')


@pytest.mark.parametrize(("toml", "key"), [
    ('backend = true', "store.backend"),
    ('backend = "mysql"', "store.backend"),
    ('name = 7', "store.name"),
    ('name = "Casa"', "store.name"),
    ('name = "casa trabajo"', "store.name"),
    (f'name = "{"a" * 21}"', "store.name"),
    ('url = 5', "store.url"),
    ('colour = "red"', "store.colour"),
])
def test_strict_types_and_names(tmp_path: Path, toml: str, key: str) -> None:
    with pytest.raises(ConfigError, match=f"`{key}`"):
        load(tmp_path, f"[store]\n{toml}\n")


def test_a_wrong_url_is_refused_without_showing_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, f'[store]\nurl = "mysql://rumi:{SECRET}@db/rumi"\n')
    assert "`store.url`" in str(caught.value) and SECRET not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, "", RUMI_STORE_URL=f"http://rumi:{SECRET}@db/rumi")
    assert "RUMI_STORE_URL" in str(caught.value) and SECRET not in str(caught.value)


@pytest.mark.parametrize(("url", "shown", "where"), [
    ("postgresql://rumi:s3cret@db.casa:5432/rumi", "postgresql://rumi:***@db.casa:5432/rumi",
     "db.casa:5432"),
    ("postgresql://rumi@db.casa/rumi", "postgresql://rumi@db.casa/rumi", "db.casa:5432"),
    ("postgres://db.casa:6543/rumi", "postgres://db.casa:6543/rumi", "db.casa:6543"),
    (f"postgresql://rumi:{SECRET}@10.0.0.2:5433/rumi", "postgresql://rumi:***@10.0.0.2:5433/rumi",
     "10.0.0.2:5433"),
    ("postgresql://rumi:pw@[::1]:5432/rumi", "postgresql://rumi:***@[::1]:5432/rumi",
     "[::1]:5432"),
    ("postgresql://db/rumi?user=rumi&password=s3cret&sslmode=require",
     "postgresql://db/rumi?user=rumi&password=***&sslmode=require", "db:5432"),
    ("host=db port=5444 user=rumi password=s3cret", "host=db port=5444 user=rumi password=***",
     "db:5444"),
    ("host=db password='s3 cret' user=rumi", "host=db password=*** user=rumi", "db:5432"),
    ("postgresql://rumi:s3cret@db:notaport/rumi", "postgresql://rumi:***@db:notaport/rumi",
     "(unreadable host in store.url)"),
    ("s3cret", "(not a postgresql:// URL)", "localhost:5432"),
])
def test_a_store_url_is_shown_without_its_password(url: str, shown: str, where: str) -> None:
    assert redacted_url(url) == shown
    assert endpoint(url) == where


_password = st.text(alphabet=st.characters(blacklist_categories=("Cs",)),
                    min_size=6, max_size=40)


@given(user=st.from_regex(r"[a-z]{1,8}", fullmatch=True), password=_password,
       host=st.sampled_from(["db", "db.casa", "10.0.0.2", "[::1]", "", "db:abc", "[::1"]),
       tail=st.sampled_from(["/rumi", "", "/rumi?sslmode=require", "/a@b", ":5432/rumi"]))
def test_the_password_never_appears_whatever_the_url(user: str, password: str, host: str,
                                                     tail: str) -> None:
    assume(password not in f"postgresql://{user}:@{host}{tail}***?password=")
    assume(not re.search(r"(?i)&[a-z_]+=", password))  # that would start the next parameter
    url = f"postgresql://{user}:{password}@{host}{tail}"
    assert password not in redacted_url(url)
    assert password not in endpoint(url)
    in_query = f"postgresql://{host}/rumi?password={password}"
    assert password not in redacted_url(in_query)
    assume(password[1:] not in f"{host}:5432 localhost:5432 (unreadable host in store.url)")
    assert password[1:] not in endpoint(in_query)
