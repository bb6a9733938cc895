"""The verification loop: from "an action was dispatched" to an honest ``VerificationOutcome``."""
