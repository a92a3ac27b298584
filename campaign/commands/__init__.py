"""The use cases: one module per thing a user asks for (submit, status, rerun,
cancel, compare, report, plan-repeats), with the attempt and claim records they
share. `campaign.api` is their front door and the CLI sits on top of it; nothing
below this room imports it."""
