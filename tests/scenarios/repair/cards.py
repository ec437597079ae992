"""A card desk with two flows one message can fit equally ("my card"), for the clarification,
skip-question and cannot-handle repair scenarios."""

from tether import Agent, Field, Flow, collect, end, on_message, pattern, reply

LAST_FOUR = r"\b(\d{4})\b"

freeze = Flow("freeze_card", "Freeze a card", nodes=[
    collect("which", fields=["card"], ask="Which card should I freeze? (the last four digits)",
            resolvers=[pattern("card", LAST_FOUR)], max_turns=2),
    reply("frozen", response="Card ${card} is frozen.", next=end("frozen")),
    # the step's alternative when the customer cannot answer it (on_skip)
    reply("every_card", response="No problem: I've frozen every card on your account.", next=end("frozen_all")),
], on=[on_message("my card", "freeze")], on_skip="every_card")

report = Flow("report_card", "Report a lost card", nodes=[
    collect("which", fields=["card"], ask="Which card did you lose? (the last four digits)",
            resolvers=[pattern("card", LAST_FOUR)], max_turns=2),
    reply("reported", response="Card ${card} is reported lost.", next=end("reported")),
], on=[on_message("my card", "lost card")])

agent = Agent("Bo", flows=[freeze, report], fields={"card": Field("string", extract="asked")})
