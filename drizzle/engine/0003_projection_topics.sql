CREATE TABLE "replayable"."projection_topics" (
	"projection" text NOT NULL,
	"topic" text NOT NULL,
	"first_consumed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "projection_topics_projection_topic_pk" PRIMARY KEY("projection","topic")
);
