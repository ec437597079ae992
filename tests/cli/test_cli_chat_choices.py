"""``tether chat`` shows the choices a node offers, and a typed label is taken with no model."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import chat

APP = '''
from tether import Agent, Field, Flow, collect, end, on_message, reply

size = collect("size", fields=["size"], ask="Which size?", choices=["Small", ("L", "Large")])
done = reply("done", response="A ${size} pizza, coming up.", next=end("ordered"))
agent = Agent("Pia", fields={"size": Field("string")},
              flows=[Flow("pizza", "Order a pizza", nodes=[size, done], on=[on_message()])])
'''


def test_the_chat_shows_choices_as_buttons_and_takes_a_typed_label(tmp_path: Path) -> None:
    app = tmp_path / "pizza.py"
    app.write_text(APP)
    done = chat(app, tmp_path / "tether.db", "hi", "large", cwd=tmp_path)
    assert done.code == 0, done.err
    assert done.replies("Pia") == ["Which size?", "A L pizza, coming up."]
    assert "  [Small]  [Large]" in done.out.splitlines()
    assert done.infos()[-1].endswith("0 calls")
