"""Constants of the partner spec (``shared/spec/partner-interfaces.md``), word for word.

This is the only module, besides ``workbench.pesc``, that the sandbox and the client share: the
spec's paths, scopes and messages are facts about the partner, not assumptions of either side.
"""

from __future__ import annotations

from typing import Literal, get_args

# §4.1 identity server
TOKEN_PATH = "/auth/connect/token"
INTL_SCOPE = "intl_api.public"
DOMESTIC_SCOPE = "dod_api"
# DESIGN §3: the spec does not say how the exchange authenticates; the sandbox uses this scope.
EXCHANGE_SCOPE = "transcript_api"
# Not in the spec: OCAS' partner-API overview and its own clients log the exchange roles in here,
# on the exchange's own host (DESIGN §3, "exchange authentication").
ETMS_LOGIN_PATH = "/api/auth/login"

# §4.2 international placement interface (gateway)
DIAGNOSTICS_PATH = "/api/v1/diagnostics/authorization"
PENDING_PLACEMENT_EVENTS_PATH = "/international/placements/sis/placement-events/pending"
# §4.3 domestic on-demand interface (gateway)
PEEK_EVENTS_PATH = "/apply/domestic/api/v1/events/peek"
SUBSCRIPTION_KEY_HEADER = "Subscription-Key"

# §4.4 transcript exchange, relative to the exchange base URL; {id} is a RequestID
SUPPLIER_PENDING_PATH = "/api/transcriptrequests/no_response"
SUPPLIER_REQUEST_PATH = "/api/transcriptrequests/{id}"
SUPPLIER_RESPONSES_PATH = "/api/transcriptrequests/{id}/responses"
SUPPLIER_TRANSCRIPTS_PATH = "/api/transcriptrequests/{id}/transcripts"
CONSUMER_PENDING_PATH = "/api/transcripts/no_response"
CONSUMER_TRANSCRIPT_PATH = "/api/transcripts/{id}"
CONSUMER_ACKNOWLEDGMENT_PATH = "/api/transcripts/{id}/acknowledgment"
# DESIGN §3: the two send routes of the supplier as a partner spells them. "plural" is the
# spec's (and OCAS' endpoints page); "singular" what OCAS' overview page, its own integration
# tests and Mohawk's client post to.
SEND_ROUTES = {
    "plural": {
        "send_response": SUPPLIER_RESPONSES_PATH,
        "send_transcript": SUPPLIER_TRANSCRIPTS_PATH,
    },
    "singular": {
        "send_response": "/api/transcriptrequests/{id}/response",
        "send_transcript": "/api/transcriptrequests/{id}/transcript",
    },
}
# TransmissionData/DocumentProcessCode: test traffic or real (pesc/NOTES.md §2)
PROCESS_CODES = ("TEST", "PRODUCTION")

PESCXML_FIELD = "PESCXML"

# §7 error messages, to the letter
NO_REQUESTS_FOUND = "No requests found"
NO_TRANSCRIPTS_FOUND = "No transcripts found."
UNKNOWN_REQUEST_ID = "Cannot find transcript request ID."
UNKNOWN_TRANSCRIPT_ID = "Cannot find transcript by ID."

# §2.5 namespaces named by the spec (version 1.0.0 each)
NS_V1_0_0 = {
    "TranscriptRequest": "urn:org:pesc:message:TranscriptRequest:v1.0.0",
    # The spec gives TranscriptResponse the request's namespace.
    "TranscriptResponse": "urn:org:pesc:message:TranscriptRequest:v1.0.0",
    "CollegeTranscript": "urn:org:pesc:message:CollegeTranscript:v1.0.0",
    "Acknowledgment": "urn:org:pesc:message:TranscriptAcknowledgment:v1.0.0",
    "CoreMain": "urn:org:pesc:core:CoreMain:v1.0.0",
}
# shared/pesc/NOTES.md §0: what real traffic uses
NS_V1_1_0 = {
    "TranscriptRequest": "urn:org:pesc:message:TranscriptRequest:v1.1.0",
    "TranscriptResponse": "urn:org:pesc:message:TranscriptResponse:v1.1.0",
    "CollegeTranscript": "urn:org:pesc:message:CollegeTranscript:v1.3.0",
    "Acknowledgment": "urn:org:pesc:message:TranscriptAcknowledgment:v1.1.0",
    "CoreMain": "urn:org:pesc:core:CoreMain:v1.10.0",
    "AcademicRecord": "urn:org:pesc:sector:AcademicRecord:v1.6.0",
}
NAMESPACE_FAMILIES = {"v1.0.0": NS_V1_0_0, "v1.1.0": NS_V1_1_0}

# PESC AcRec ResponseStatusType and HoldReasonType (DESIGN §4): the same values in AcRec 1.2.0
# to 1.9.0; here so that `workbench send --help` offers them without loading the XML stack.
ResponseStatus = Literal[
    "TranscriptSent", "TranscriptRequestReceived", "Hold", "NoRecord", "MultipleMatch",
    "Canceled", "OfflineRecordSearch", "OfflineRecordSent", "Deceased",
]  # fmt: skip
HoldReason = Literal["Financial", "TranscriptFee", "RequestedAction", "Other"]
RESPONSE_STATUSES: tuple[str, ...] = get_args(ResponseStatus)
HOLD_REASONS: tuple[str, ...] = get_args(HoldReason)
