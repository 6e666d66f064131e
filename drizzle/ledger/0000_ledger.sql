-- IF NOT EXISTS: databases migrated by drizzle/ 0000-0003 already have this schema and its tables.
CREATE SCHEMA IF NOT EXISTS "ledger";
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "ledger"."ledger_accounts" (
	"account_id" text PRIMARY KEY NOT NULL,
	"balance_cents" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE IF NOT EXISTS "ledger"."ledger_orders" (
	"order_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"amount_cents" bigint NOT NULL,
	"state" text NOT NULL,
	"paid_at" timestamp with time zone,
	"shipped_at" timestamp with time zone
);
