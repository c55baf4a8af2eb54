"""Framework integrations, each an optional extra:

- ``groundrule.integrations.langchain``: ``pip install "groundrule[langchain]"``
- ``groundrule.integrations.openai_agents``: ``pip install "groundrule[openai-agents]"``

They use only the public ``Run`` / ``AsyncRun`` API.
"""
