"""Kafka's error codes as one table, and kcli's exception types.

``ErrorCode`` is the wire's error table (Kafka's ``Errors``): each member is the code a response
carries, named as Kafka names it, with whether a client may retry and the message Kafka's
exception carries by default. Exceptions raised inside the broker carry the ``error_code`` their
failure answers with, so a handler turns any ``KcliError`` into a response without a second table.

Every error a user can cause (bad argument, missing or corrupt file) is a ``KcliError``; the CLI's
error boundary prints its message as one line on stderr and exits with its ``exit_code``.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """A Kafka error code: ``ErrorCode.OFFSET_OUT_OF_RANGE.retriable``, ``.message``."""

    retriable: bool
    message: str

    def __new__(cls, code: int, retriable: bool, message: str) -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    UNKNOWN_SERVER_ERROR = -1, False, "The broker hit an unexpected failure while handling the request."
    NONE = 0, False, ""
    OFFSET_OUT_OF_RANGE = 1, False, "The offset asked for lies outside the range the partition's log currently holds."
    CORRUPT_MESSAGE = 2, True, "The message is corrupt: a bad CRC, an invalid size, a null key on a compacted topic, or similar damage."
    UNKNOWN_TOPIC_OR_PARTITION = 3, True, "This broker does not host the given topic or partition."
    INVALID_FETCH_SIZE = 4, False, "The fetch asked for an invalid number of bytes."
    LEADER_NOT_AVAILABLE = 5, True, "The partition has no leader right now, most likely because a leader election is under way."
    NOT_LEADER_OR_FOLLOWER = 6, True, "This broker is not the partition's leader (for leader-only requests) or not one of its replicas."
    REQUEST_TIMED_OUT = 7, True, "The request did not complete in time."
    BROKER_NOT_AVAILABLE = 8, False, "The broker cannot be reached."
    REPLICA_NOT_AVAILABLE = 9, True, "The requested replica of the partition is not available."
    MESSAGE_TOO_LARGE = 10, False, "A message in the request exceeds the largest message size the broker accepts."
    STALE_CONTROLLER_EPOCH = 11, False, "The request came from a controller that is no longer the active one."
    OFFSET_METADATA_TOO_LARGE = 12, False, "The metadata string attached to the committed offset is too long."
    NETWORK_EXCEPTION = 13, True, "The connection to the broker closed before a response arrived."
    COORDINATOR_LOAD_IN_PROGRESS = 14, True, "The coordinator is still loading its state and cannot serve requests yet."
    COORDINATOR_NOT_AVAILABLE = 15, True, "The coordinator cannot be reached right now."
    NOT_COORDINATOR = 16, True, "This broker is not the coordinator for the given group or transactional id."
    INVALID_TOPIC_EXCEPTION = 17, False, "The topic name is invalid or the topic may not be used for this operation."
    RECORD_LIST_TOO_LARGE = 18, False, "A record batch in the request is larger than the log segment size allows."
    NOT_ENOUGH_REPLICAS = 19, True, "The write was refused because fewer replicas are in sync than min.insync.replicas requires."
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, True, "The write reached the leader's log, but fewer replicas than required acknowledged it."
    INVALID_REQUIRED_ACKS = 21, False, "The produce request's acks value is not one the broker allows."
    ILLEGAL_GENERATION = 22, False, "The group generation id in the request is not the current one."
    INCONSISTENT_GROUP_PROTOCOL = 23, False, "The member's protocol type or protocols do not match the group's, or the list was empty."
    INVALID_GROUP_ID = 24, False, "The group id is empty or otherwise invalid."
    UNKNOWN_MEMBER_ID = 25, False, "The coordinator has no member with this member id."
    INVALID_SESSION_TIMEOUT = 26, False, "The session timeout falls outside the broker's allowed minimum and maximum."
    REBALANCE_IN_PROGRESS = 27, False, "The group is rebalancing; the member has to rejoin."
    INVALID_COMMIT_OFFSET_SIZE = 28, False, "The size of the offset commit data is invalid."
    TOPIC_AUTHORIZATION_FAILED = 29, False, "The principal is not authorized to access the topic."
    GROUP_AUTHORIZATION_FAILED = 30, False, "The principal is not authorized to access the group."
    CLUSTER_AUTHORIZATION_FAILED = 31, False, "The principal is not authorized to perform this cluster operation."
    INVALID_TIMESTAMP = 32, False, "The message timestamp is outside the range the broker accepts."
    UNSUPPORTED_SASL_MECHANISM = 33, False, "The broker does not offer the requested SASL mechanism."
    ILLEGAL_SASL_STATE = 34, False, "The request is not allowed in the connection's current SASL state."
    UNSUPPORTED_VERSION = 35, False, "The broker does not support this version of the API."
    TOPIC_ALREADY_EXISTS = 36, False, "A topic with this name exists already."
    INVALID_PARTITIONS = 37, False, "The partition count is invalid, for example less than one."
    INVALID_REPLICATION_FACTOR = 38, False, "The replication factor is less than one or exceeds the number of available brokers."
    INVALID_REPLICA_ASSIGNMENT = 39, False, "The replica assignment is not valid."
    INVALID_CONFIG = 40, False, "The configuration is not valid."
    NOT_CONTROLLER = 41, True, "This node is not the cluster's active controller."
    INVALID_REQUEST = 42, False, "The request is malformed or not understood by this broker; the broker log has details."
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43, False, "The request needs a newer message format than the one the broker uses."
    POLICY_VIOLATION = 44, False, "The request's parameters break a policy configured on the broker."
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, False, "The broker received a producer sequence number out of order."
    DUPLICATE_SEQUENCE_NUMBER = 46, False, "The broker received a producer sequence number it has already seen."
    INVALID_PRODUCER_EPOCH = 47, False, "The producer sent a request with an epoch older than the current one."
    INVALID_TXN_STATE = 48, False, "The transactional operation is not allowed in the transaction's current state."
    INVALID_PRODUCER_ID_MAPPING = 49, False, "The producer id is not the one currently assigned to this transactional id."
    INVALID_TRANSACTION_TIMEOUT = 50, False, "The transaction timeout exceeds the broker's transaction.max.timeout.ms."
    CONCURRENT_TRANSACTIONS = 51, True, "Another operation on the same transaction is still in progress."
    TRANSACTION_COORDINATOR_FENCED = 52, False, "The transaction coordinator writing the markers is no longer the coordinator for this producer."
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, False, "The principal is not authorized to use the transactional id."
    SECURITY_DISABLED = 54, False, "Security features are turned off on this broker."
    OPERATION_NOT_ATTEMPTED = 55, False, "The broker skipped this operation, typically because an earlier part of a batched request failed."
    KAFKA_STORAGE_ERROR = 56, True, "A disk error occurred while accessing a log file."
    LOG_DIR_NOT_FOUND = 57, False, "The given log directory is not one of the broker's configured log directories."
    SASL_AUTHENTICATION_FAILED = 58, False, "SASL authentication did not succeed."
    UNKNOWN_PRODUCER_ID = 59, False, "The broker has no state for this producer id, for example because its records were all removed by retention."
    REASSIGNMENT_IN_PROGRESS = 60, False, "A partition reassignment is currently running."
    DELEGATION_TOKEN_AUTH_DISABLED = 61, False, "Delegation tokens are not enabled on this cluster."
    DELEGATION_TOKEN_NOT_FOUND = 62, False, "The broker has no such delegation token."
    DELEGATION_TOKEN_OWNER_MISMATCH = 63, False, "The principal is not the owner or a renewer of the delegation token."
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64, False, "Delegation token requests are refused on plaintext, one-way SSL, and token-authenticated connections."
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65, False, "The principal is not authorized to use the delegation token."
    DELEGATION_TOKEN_EXPIRED = 66, False, "The delegation token has expired."
    INVALID_PRINCIPAL_TYPE = 67, False, "The principal type given is not supported."
    NON_EMPTY_GROUP = 68, False, "The group still has members."
    GROUP_ID_NOT_FOUND = 69, False, "No group with this id exists."
    FETCH_SESSION_ID_NOT_FOUND = 70, True, "The broker has no fetch session with this id."
    INVALID_FETCH_SESSION_EPOCH = 71, True, "The fetch session epoch does not match what the broker expects."
    LISTENER_NOT_FOUND = 72, True, "The partition leader has no listener matching the one the metadata request arrived on."
    TOPIC_DELETION_DISABLED = 73, False, "Deleting topics is turned off on this cluster."
    FENCED_LEADER_EPOCH = 74, True, "The leader epoch in the request is older than the broker's current epoch."
    UNKNOWN_LEADER_EPOCH = 75, True, "The leader epoch in the request is newer than any epoch the broker knows."
    UNSUPPORTED_COMPRESSION_TYPE = 76, False, "The client cannot handle the compression type used by the partition."
    STALE_BROKER_EPOCH = 77, False, "The broker epoch in the request is no longer current."
    OFFSET_NOT_AVAILABLE = 78, True, "The new leader's high watermark has not caught up yet, so the offset cannot be served reliably."
    MEMBER_ID_REQUIRED = 79, False, "The member must obtain a member id before it can join the group."
    PREFERRED_LEADER_NOT_AVAILABLE = 80, True, "The partition's preferred leader is not available."
    GROUP_MAX_SIZE_REACHED = 81, False, "The group already has the maximum number of members."
    FENCED_INSTANCE_ID = 82, False, "Another member with the same group.instance.id but a different member id has replaced this one."
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83, True, "No replica eligible to lead the partition is available."
    ELECTION_NOT_NEEDED = 84, True, "The partition already has the leader an election would choose."
    NO_REASSIGNMENT_IN_PROGRESS = 85, False, "No partition reassignment is running."
    GROUP_SUBSCRIBED_TO_TOPIC = 86, False, "Offsets of a topic cannot be deleted while the group is subscribed to that topic."
    INVALID_RECORD = 87, False, "The broker rejected the record because it failed validation."
    UNSTABLE_OFFSET_COMMIT = 88, True, "Pending transactional offset commits must complete before offsets can be read."
    THROTTLING_QUOTA_EXCEEDED = 89, True, "The request exceeded the principal's throttling quota."
    PRODUCER_FENCED = 90, False, "A newer producer with the same transactional id has fenced this one."
    RESOURCE_NOT_FOUND = 91, False, "The request names a resource that does not exist."
    DUPLICATE_RESOURCE = 92, False, "The request names the same resource more than once."
    UNACCEPTABLE_CREDENTIAL = 93, False, "The requested credential does not meet the acceptance criteria."
    INCONSISTENT_VOTER_SET = 94, False, "The sender or receiver of a voter-only request is not among the expected voters."
    INVALID_UPDATE_VERSION = 95, False, "The update version given is not valid."
    FEATURE_UPDATE_FAILED = 96, False, "The finalized features could not be updated because of an unexpected server error."
    PRINCIPAL_DESERIALIZATION_FAILURE = 97, False, "A forwarded request's principal could not be deserialized, pointing to a security setup problem in the cluster."
    SNAPSHOT_NOT_FOUND = 98, False, "The requested snapshot does not exist."
    POSITION_OUT_OF_RANGE = 99, False, "The requested position is negative or beyond the end of the snapshot."
    UNKNOWN_TOPIC_ID = 100, True, "This broker does not host a topic with the given topic id."
    DUPLICATE_BROKER_REGISTRATION = 101, False, "Another broker is already registered with this broker id."
    BROKER_ID_NOT_REGISTERED = 102, False, "No broker is registered with this broker id."
    INCONSISTENT_TOPIC_ID = 103, True, "The topic id in the request differs from the topic id of the log."
    INCONSISTENT_CLUSTER_ID = 104, False, "The cluster id in the request differs from the server's cluster id."
    TRANSACTIONAL_ID_NOT_FOUND = 105, False, "No transaction with this transactional id exists."
    FETCH_SESSION_TOPIC_ID_ERROR = 106, True, "The fetch session used topic ids inconsistently."
    INELIGIBLE_REPLICA = 107, False, "The proposed ISR includes a replica that is not eligible to be in it."
    NEW_LEADER_ELECTED = 108, False, "The partition state was updated, but meanwhile a new leader was elected."
    OFFSET_MOVED_TO_TIERED_STORAGE = 109, False, "The requested offset now lives only in tiered storage."
    FENCED_MEMBER_EPOCH = 110, False, "The group coordinator fenced the member's epoch; the member must give up its partitions and rejoin."
    UNRELEASED_INSTANCE_ID = 111, False, "Another member of the group still holds this instance id and must leave first."
    UNSUPPORTED_ASSIGNOR = 112, False, "The group does not support this assignor or its version range."
    STALE_MEMBER_EPOCH = 113, False, "The member epoch is out of date; the member must retry once it has its current epoch from a heartbeat."
    MISMATCHED_ENDPOINT_TYPE = 114, False, "The request reached an endpoint of the wrong kind."
    UNSUPPORTED_ENDPOINT_TYPE = 115, False, "This kind of endpoint is not supported yet."
    UNKNOWN_CONTROLLER_ID = 116, False, "No controller with this id is known."
    UNKNOWN_SUBSCRIPTION_ID = 117, False, "The telemetry push used a subscription id that is unknown or out of date."
    TELEMETRY_TOO_LARGE = 118, False, "The telemetry push is larger than the broker accepts."
    INVALID_REGISTRATION = 119, False, "The controller judged the broker's registration invalid."
    TRANSACTION_ABORTABLE = 120, False, "The transaction hit an error; aborting it lets the transactional id be used again."
    INVALID_RECORD_STATE = 121, False, "The record is in a state that does not allow its delivery to be acknowledged."
    SHARE_SESSION_NOT_FOUND = 122, True, "The broker has no such share session."
    INVALID_SHARE_SESSION_EPOCH = 123, True, "The share session epoch does not match what the broker expects."
    FENCED_STATE_EPOCH = 124, False, "The share coordinator refused the request because the share-group state epoch does not match."
    INVALID_VOTER_KEY = 125, False, "The voter key does not match the key of the replica that received it."
    DUPLICATE_VOTER = 126, False, "The voter already belongs to the voter set."
    VOTER_NOT_FOUND = 127, False, "The voter does not belong to the voter set."

    @classmethod
    def for_code(cls, code: int) -> ErrorCode:
        """The member for a wire error code; codes this table does not know map to UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


# The exception class Kafka's Java clients raise for an error code (Errors.java): the code's name in
# camel case plus "Exception", in org.apache.kafka.common.errors, except for these.
_JAVA_EXCEPTION_NAMES = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
    ErrorCode.CORRUPT_MESSAGE: "CorruptRecordException",
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.MESSAGE_TOO_LARGE: "RecordTooLargeException",
    ErrorCode.STALE_CONTROLLER_EPOCH: "ControllerMovedException",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "OffsetMetadataTooLarge",
    ErrorCode.NETWORK_EXCEPTION: "NetworkException",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "InvalidTopicException",
    ErrorCode.RECORD_LIST_TOO_LARGE: "RecordBatchTooLargeException",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    ErrorCode.TOPIC_ALREADY_EXISTS: "TopicExistsException",
    ErrorCode.INVALID_CONFIG: "InvalidConfigurationException",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "OutOfOrderSequenceException",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "DuplicateSequenceException",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: "InvalidPidMappingException",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "InvalidTxnTimeoutException",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "TransactionalIdAuthorizationException",
    ErrorCode.KAFKA_STORAGE_ERROR: "KafkaStorageException",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SaslAuthenticationException",
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "DelegationTokenDisabledException",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: "UnsupportedByAuthenticationException",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "DelegationTokenAuthorizationException",
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: "PrincipalDeserializationException",
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: "FetchSessionTopicIdException",
}


def java_exception(code: ErrorCode) -> str:
    """The fully qualified name of the Java exception Kafka's clients raise for ``code``
    (``org.apache.kafka.common.errors.KafkaStorageException`` for KAFKA_STORAGE_ERROR)."""
    if code == ErrorCode.INVALID_RECORD:
        return "org.apache.kafka.common.InvalidRecordException"
    name = _JAVA_EXCEPTION_NAMES.get(code) or "".join(part.capitalize() for part in code.name.split("_")) + "Exception"
    return f"org.apache.kafka.common.errors.{name}"


# kcli's exit statuses, the README's contract: 0 ok, 1 error, 2 usage (click's usage errors exit
# 2 too); 130 after SIGINT and 143 after SIGTERM, as the JVM exits on those signals.
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class KcliError(Exception):
    """An error with a message fit to show a user as one line."""

    exit_code = EXIT_ERROR
    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class KafkaError(KcliError):
    """A failure that answers with a given Kafka error code: ``raise KafkaError(ErrorCode.X, "why")``."""

    def __init__(self, error_code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message if message is not None else error_code.message)
        self.error_code = error_code

    @property
    def java_class(self) -> str:
        """The Java exception Kafka's clients raise for this error (what Kafka's tools print)."""
        return java_exception(self.error_code)


class KafkaStorageError(KcliError):
    """A disk error while reading or writing a log (Kafka's KafkaStorageException): retriable."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirFailure(KafkaStorageError):
    """An I/O error that left a log's files unlike its state in memory (a failed append whose
    undoing failed too): the log dir holding it must go offline (Kafka's LogDirFailureChannel)."""


class UsageError(KcliError):
    """A wrong or missing command-line argument."""

    exit_code = EXIT_USAGE


class CorruptRecordError(KcliError):
    """Bytes that do not form a valid record batch (Kafka's CORRUPT_MESSAGE)."""

    error_code = ErrorCode.CORRUPT_MESSAGE

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class InvalidRecordError(KcliError):
    """A well-formed batch whose contents break a rule (Kafka's INVALID_RECORD)."""

    error_code = ErrorCode.INVALID_RECORD


class CorruptIndexError(KcliError):
    """An offset or time index that fails its sanity check."""


class CorruptCheckpointError(KcliError):
    """A checkpoint or metadata file that cannot be parsed; the message names the file."""


class OffsetOutOfRangeError(KcliError):
    """A read below the log start offset or above the log end offset."""

    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class InvalidOffsetError(KcliError):
    """An append whose offsets are not larger than the log's last offset."""
