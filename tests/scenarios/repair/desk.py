"""A newsletter desk with one collect step at its default max_turns (10), for the cannot-handle
limit scenarios: three answers in a row that nothing understands hand the session to a person."""

from tether import Agent, Field, Flow, collect, end, on_message, pattern, reply

EMAIL = r"\b([\w.+-]+@[\w-]+\.[a-z]{2,})\b"

signup = Flow("newsletter", "Sign up for the newsletter", nodes=[
    collect("email", fields=["email"], ask="Which email address should I use?", resolvers=[pattern("email", EMAIL)]),
    reply("done", response="${email} is signed up.", next=end("signed_up")),
], on=[on_message("newsletter", "sign up")])

unsubscribe = Flow("unsubscribe", "Stop the newsletter", nodes=[
    reply("stopped", response="You won't get the newsletter any more.", next=end("stopped")),
], on=[on_message("unsubscribe", "stop the newsletter")])

agent = Agent("Nell", flows=[signup, unsubscribe], fields={"email": Field("string", extract="asked")})
